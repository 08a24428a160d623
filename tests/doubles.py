"""Test doubles shared by the test files (the library itself ships none)."""

from __future__ import annotations

import hashlib
import re
from typing import Callable, Sequence

import numpy as np

from memgraft.models.llm.base import ChatRequest, Completion

ENTITY_LINE = re.compile(r"^- (.+?) \(([^()]*)\): ")
Script = Sequence[str | Completion] | Callable[[ChatRequest], str | Completion]


def count_tokens(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


class ScriptedLLM:
    """An :class:`~memgraft.models.llm.base.LLM` that answers from a script.

    ``script`` is either a list of answers handed out in order, one per request
    across all calls (running out is an error), or a callable from a request to
    its answer. An answer is a text, or a full :class:`Completion` to control
    token counts and ``finish_reason``. Every request and call is recorded.
    """

    def __init__(self, script: Script, name: str = "scripted"):
        self.name = name
        self._script = script
        self._next = 0
        self.requests: list[ChatRequest] = []
        self.calls: list[list[ChatRequest]] = []

    def _answer(self, request: ChatRequest) -> str | Completion:
        if callable(self._script):
            return self._script(request)
        if self._next >= len(self._script):
            raise AssertionError(f"ScriptedLLM ran out of answers after {self._next} requests")
        answer = self._script[self._next]
        self._next += 1
        return answer

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        out = []
        for request in requests:
            self.requests.append(request)
            answer = self._answer(request)
            if isinstance(answer, Completion):
                out.append(answer)
                continue
            prompt = sum(count_tokens(m["content"]) for m in request.messages)
            out.append(Completion(answer, prompt_tokens=prompt, completion_tokens=count_tokens(answer)))
        return out


class HGMemScript:
    """A scripted policy for HGMem's loop: answers each call by its schema, on a known path.

    Step 0 inserts p1 over the first two evidence entities. Step 1 is judged
    insufficient with a *local* concern about p1, updates p1, inserts p2 and
    merges p1 and p2. Step 2 is insufficient with a *global* concern and inserts
    one more point. The answer names the first memory point's description.
    """

    def __init__(self, fail_on: str | None = None):
        self.judgements = 0
        self.fail_on = fail_on  # a question text whose every call answers invalid JSON

    @staticmethod
    def _entities(prompt: str) -> list[str]:
        """The shown entities' names, from lines "- NAME (TYPE): description" (a name may hold brackets)."""
        block = prompt.split("Entities:\n", 1)[1].split("\nRelations:", 1)[0]
        return [m.group(1) for line in block.splitlines() if (m := ENTITY_LINE.match(line))]

    @staticmethod
    def _step(prompt: str) -> int:
        return prompt.count("[p")  # memory lines rendered as "[pN] ..."

    def __call__(self, request: ChatRequest) -> str:
        import json

        prompt = request.messages[-1]["content"]
        if self.fail_on and self.fail_on in prompt.split("\n", 1)[0]:
            return "not json at all"
        title = (request.json_schema or {}).get("title")
        if title == "SufficiencyJudgement":
            self.judgements += 1
            if "[p2]" not in prompt and "[p3]" not in prompt:
                return json.dumps({"sufficient": False, "concerns": [
                    {"kind": "local", "point_ids": ["p1"], "subquery": "more about the first fact"}]})
            return json.dumps({"sufficient": False, "concerns": [
                {"kind": "global", "point_ids": [], "subquery": "what else is relevant"}]})
        if title in ("Evolution", "InsertOnly"):
            names = self._entities(prompt)
            memory = prompt.split("Current memory:\n", 1)[1].split("\n\n", 1)[0]
            if memory == "(empty)":
                out = {"updates": [], "inserts": [{"description": f"{names[0]} relates to {names[1]}.",
                                                   "entities": names[:2]}]}
            elif "[p3]" not in memory and "[p2]" not in memory:
                pair = names[1:3] if len(names) >= 3 else names[-2:]  # a small (degraded) graph may show two
                out = {"updates": [{"point_id": "p1", "description": "Refined first fact.", "entities": names[:1]}],
                       "inserts": [{"description": f"{pair[0]} and {pair[-1]} are linked.", "entities": pair}]}
            else:
                out = {"updates": [], "inserts": [{"description": "A fact found by exploring.", "entities": names[:2]}]}
            if title == "InsertOnly":
                out.pop("updates")
            return json.dumps(out)
        if title == "Merging":
            if "[p1]" in prompt and "[p2]" in prompt:
                return json.dumps({"merges": [{"point_ids": ["p1", "p2"], "description": "Both facts together."}]})
            return json.dumps({"merges": []})
        if title == "Answer":
            return json.dumps({"answer": "scripted answer"})
        raise AssertionError(f"unexpected schema {title!r}")


class HashEmbedder:
    """An :class:`~memgraft.models.embedder.Embedder` over a bag of hashed words in 64 dims, unit
    length: deterministic and instant. Every call's texts are recorded in ``calls``."""

    def __init__(self, name: str = "hash-64", dim: int = 64):
        self.name, self.dim = name, dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int.from_bytes(hashlib.sha1(word.encode()).digest()[:4], "little") % self.dim] += 1.0
            out[i] /= max(np.linalg.norm(out[i]), 1e-9)
        return out
