"""Test doubles shared by the test files (the library itself ships none)."""

from __future__ import annotations

from typing import Callable, Sequence

from memgraft.models.llm.base import ChatRequest, Completion

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
