"""One caller's conversation with an LLM: structured asks, with the calls and tokens counted.

HGMem's loop and HiCoMER's updater both need "ask for this schema, retry a bad
answer, fail loudly if it stays bad, and tell me what it cost"; this is that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from memgraft.config import GenerationSettings
from memgraft.models.llm.base import LLM, Message, StructuredResult, generate_structured

T = TypeVar("T", bound=BaseModel)


class StructuredOutputError(RuntimeError):
    """The model's answer stayed invalid for its schema after every retry."""


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    salvaged: int = 0  # answers kept from replies cut at the token limit (base.generate_structured)

    def add(self, other: "Usage") -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.salvaged += other.salvaged

    def minus(self, before: "Usage") -> "Usage":
        return Usage(self.calls - before.calls, self.prompt_tokens - before.prompt_tokens,
                     self.completion_tokens - before.completion_tokens, self.salvaged - before.salvaged)

    @classmethod
    def of(cls, res: StructuredResult[Any]) -> "Usage":
        """What one structured ask cost: every attempt a call."""
        return cls(res.attempts, res.prompt_tokens, res.completion_tokens, int(res.salvaged))

    def copy(self) -> "Usage":
        return Usage(self.calls, self.prompt_tokens, self.completion_tokens, self.salvaged)


@dataclass
class LLMSession:
    llm: LLM
    generation: GenerationSettings
    usage: Usage = field(default_factory=Usage)

    def ask(self, model: type[T], messages: list[Message], what: str) -> T:
        """One schema-constrained answer; ``what`` names the call in errors ("sufficiency at step 2")."""
        [res] = generate_structured(
            self.llm, [messages], model, retries=self.generation.json_retries,
            max_new_tokens=self.generation.max_new_tokens, temperature=self.generation.temperature,
            salvage_cut=self.generation.salvage_cut_replies,
        )
        self.usage.add(Usage.of(res))
        if res.value is None:
            raise StructuredOutputError(
                f"{what}: no valid {model.__name__} after {res.attempts} attempts ({'; '.join(res.errors[-2:])})")
        return res.value
