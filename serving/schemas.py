"""The HTTP boundary's typed bodies: what each endpoint accepts (validated, 422 on a bad one) and returns.

Requests forbid unknown fields, so a misspelt ``as_of`` is an error rather than a
silently ignored option. A memory group is the library's own stream record
(:class:`memgraft.collab.types.MemoryGroup`), so the HTTP body and a line of a
stream file are one format.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memgraft.collab.types import Memory
from memgraft.hgmem.methods import METHODS

Method = Literal[METHODS]  # type: ignore[valid-type]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- graphs (HGMem) -------------------------------------------------------------------------


class QueryRequest(_Request):
    question: str = Field(min_length=1, max_length=4000)
    method: Method = "hgmem"  # type: ignore[valid-type]


class QueryResponse(BaseModel):
    graph: str
    method: str
    question: str
    answer: str
    trace_id: str
    final_memory: dict[str, Any] | None = Field(
        None, description="the hypergraph memory the answer came from (None for methods without one)")
    steps: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float


# -- teams (HiCoMER) ------------------------------------------------------------------------


class MemoryOut(BaseModel):
    """A memory as a reader sees it: both texts, its type and time, and whether it still holds."""

    memory_id: str
    type: str
    author: str
    group_id: str
    time: datetime
    original: str
    maintained: str
    valid: bool
    maintained_at: datetime
    relation: str | None
    action: str | None

    @classmethod
    def of(cls, m: Memory) -> "MemoryOut":
        return cls(memory_id=m.memory_id, type=m.type, author=m.author, group_id=m.group_id, time=m.time,
                   original=m.original, maintained=m.maintained, valid=m.valid, maintained_at=m.maintained_at,
                   relation=None if m.relation is None else str(m.relation),
                   action=None if m.action is None else str(m.action))


class DecisionOut(BaseModel):
    decision_id: str
    memory_id: str
    level: str
    relation: str
    action: str
    before: str
    after: str
    valid_before: bool
    valid_after: bool
    decided_by: str
    reason: str


class GroupResponse(BaseModel):
    team: str
    group_id: str
    policy: str
    history: int = Field(description="|H_t|: earlier memories retrieved for review")
    revisions: int
    decisions: list[DecisionOut]
    seconds: float


class SearchRequest(_Request):
    query: str = Field(min_length=1, max_length=4000)
    k: int = Field(10, ge=1, le=100)
    as_of: datetime | None = Field(None, description="search the bank as it stood then (default: now)")


class HitOut(BaseModel):
    memory: MemoryOut
    dense: float
    semantic: float
    validity: float | None = Field(description="S_val, or None when no validity scorer is configured")
    score: float


class SearchResponse(BaseModel):
    team: str
    query: str
    as_of: datetime | None
    semantic_source: str = Field(description="where S_sem comes from (a cross-encoder, or the cosine fallback)")
    validity_source: str = Field(description="where S_val comes from, or why there is none")
    hits: list[HitOut]


class AnswerRequest(_Request):
    question: str = Field(min_length=1, max_length=4000)
    as_of: datetime | None = None
    k: int = Field(10, ge=1, le=100)
    evidence: int = Field(5, ge=1, le=50)


class Dropped(BaseModel):
    memory: MemoryOut
    beaten_by: MemoryOut
    why: str


class Usage(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class AnswerResponse(BaseModel):
    team: str
    question: str
    answer: str
    evidence: list[MemoryOut]
    dropped: list[Dropped]
    semantic_source: str
    validity_source: str
    usage: Usage | None = None


# -- service ----------------------------------------------------------------------------------


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    profile: str
    llm: str
    embedder: str
    reranker: str
    validity: str


class ChatMessage(BaseModel):
    role: str
    content: str


class ChatCompletionRequest(BaseModel):
    """The OpenAI chat body, as far as this service reads it (other fields pass through to vLLM)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0)
    seed: int | None = None
    response_format: dict[str, Any] | None = None
    stream: bool = False


class ChatChoice(BaseModel):
    index: int
    message: ChatMessage
    finish_reason: str


class ChatUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletionResponse(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: ChatUsage
