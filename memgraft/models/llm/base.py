"""The LLM protocol every backend implements, and schema-checked generation on top of it.

Backends take a batch of chat requests, each optionally carrying a JSON schema
that decoding must obey, and return texts with exact token counts. Structured
callers go through :func:`generate_structured`, which validates with pydantic,
retries what still fails, and records a failure instead of guessing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, Protocol, Sequence, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from memgraft.models.llm.salvage import salvage

Message = dict[str, str]


@dataclass
class ChatRequest:
    messages: list[Message]
    json_schema: dict[str, Any] | None = None
    max_new_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    # Wall-clock time (time.time()) past which decoding stops: the caller has given up by then (the ingress sets
    # its call timeout here), and a generation that outlives its request holds the model for everyone else.
    deadline: float | None = None


class PromptTooLong(ValueError):
    """A prompt that, with the tokens asked for, does not fit the model's context (413 over HTTP)."""


def check_fits(prompt_tokens: int, max_new_tokens: int, context_tokens: int | None, counted_by: str) -> None:
    """Refuse a prompt longer than the model's context less ``max_new_tokens``, naming the limit."""
    if context_tokens is None or prompt_tokens + max_new_tokens <= context_tokens:
        return
    raise PromptTooLong(f"the prompt is {prompt_tokens} tokens ({counted_by}); the model's context is "
                        f"{context_tokens} tokens, less max_tokens {max_new_tokens}: at most "
                        f"{max(0, context_tokens - max_new_tokens)} prompt tokens")


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"


@runtime_checkable
class LLM(Protocol):
    """A chat model that decodes a batch at once, optionally under a JSON schema."""

    name: str

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]: ...


T = TypeVar("T", bound=BaseModel)


@dataclass
class StructuredResult(Generic[T]):
    value: T | None
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    salvaged: bool = False  # the value is the closed part of a reply cut at the token limit (see salvage.py)

    @property
    def ok(self) -> bool:
        return self.value is not None


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a decoder is constrained to for ``model`` (a fresh dict: callers may change it)."""
    return json.loads(_schema_json(model))


@lru_cache(maxsize=1024)
def _schema_json(model: type[BaseModel]) -> str:
    # pydantic rebuilds the schema on every call (milliseconds); a driver asks for the same few per question.
    return json.dumps(model.model_json_schema())


def parse_json_as(model: type[T], text: str) -> T:
    """Validate ``text`` against ``model``; raises ValueError with the reason."""
    try:
        return model.model_validate_json(text.strip())
    except ValidationError as err:
        raise ValueError(f"output does not match {model.__name__}: {err.errors()[0]['msg']}") from err
    except json.JSONDecodeError as err:  # pragma: no cover - pydantic wraps this today
        raise ValueError(f"output is not JSON: {err}") from err


CUT_NOTE = ("\n\n(Your last reply ran past the {limit} limit and was cut off before its JSON closed. "
            "Reply again, shorter: fewer items and brief texts.)")


def shorter(conversation: Sequence[Message], max_new_tokens: int | None) -> list[Message]:
    """``conversation`` with its last user turn asking for a reply that fits the token limit."""
    out = [dict(m) for m in conversation]
    note = CUT_NOTE.format(limit=f"{max_new_tokens}-token" if max_new_tokens else "token")
    users = [i for i, m in enumerate(out) if m.get("role") == "user"]
    if users:
        out[users[-1]]["content"] += note
    else:
        out.append({"role": "user", "content": note.strip()})
    return out


def generate_structured(
    llm: LLM,
    messages: Sequence[list[Message]],
    model: type[T],
    *,
    retries: int = 2,
    max_new_tokens: int | None = None,
    temperature: float | None = None,
    salvage_cut: bool = True,
) -> list[StructuredResult[T]]:
    """Ask for one ``model`` per conversation, decoding under its schema.

    Invalid outputs are retried (in one batch per round) up to ``retries``
    times. A reply still cut at the token limit after the last retry keeps
    the items it closed when they make a valid ``model`` (``salvage_cut``;
    marked ``salvaged``); otherwise it is returned with ``value=None`` and
    every error seen.
    """
    schema = schema_for(model)
    results = [StructuredResult[T](value=None, text="") for _ in messages]
    asks = [list(m) for m in messages]
    pending = list(range(len(messages)))
    cut: set[int] = set()  # whose latest reply the token limit cut off
    for _ in range(retries + 1):
        if not pending:
            break
        batch = [
            ChatRequest(asks[i], json_schema=schema, max_new_tokens=max_new_tokens, temperature=temperature)
            for i in pending
        ]
        outputs = llm.generate(batch)
        still = []
        for i, out in zip(pending, outputs):
            res = results[i]
            res.attempts += 1
            res.text = out.text
            res.prompt_tokens += out.prompt_tokens
            res.completion_tokens += out.completion_tokens
            cut.discard(i)
            try:
                res.value = parse_json_as(model, out.text)
            except ValueError as err:
                reason = str(err) if out.finish_reason != "length" else f"cut at the token limit; {err}"
                res.errors.append(reason)
                still.append(i)
                if out.finish_reason == "length":  # asked again as it was, a small model runs on as long again
                    asks[i] = shorter(messages[i], max_new_tokens)
                    cut.add(i)
        pending = still
    for i in cut if salvage_cut else ():  # every one still pending: a reply that parsed left the set
        results[i].value = salvage(model, results[i].text)
        results[i].salvaged = results[i].value is not None
    return results
