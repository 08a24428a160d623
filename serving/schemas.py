"""The HTTP boundary's typed bodies: what each endpoint accepts (validated, 422 on a bad one) and returns.

Requests forbid unknown fields, so a misspelt ``as_of`` is an error rather than a
silently ignored option. A memory group is the library's own stream record
(:class:`memgraft.collab.types.MemoryGroup`), so the HTTP body and a line of a
stream file are one format; here it also forbids unknown fields.

Every text is checked to be encodable as UTF-8 (JSON allows a lone surrogate such
as ``"\\ud800"``, which the tokenizer and SQLite refuse): refused here, one caller's
text never reaches a batch it shares with others. Every time must convert to UTC
within the calendar (``9999-12-31T23:59:59-12:00`` does not).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from memgraft.collab.types import Memory, MemoryGroup, StreamMemory
from memgraft.hgmem.methods import METHODS

Method = Literal[METHODS]  # type: ignore[valid-type]

EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)  # a day inside the calendar at either end, so any
LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)  # time zone's view of a stored time still exists


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"text is not encodable as UTF-8 (a lone surrogate at position {err.start})") from None
    return text


def _in_calendar(value: datetime) -> datetime:
    try:
        utc = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError("time is outside the calendar once converted to UTC") from None
    if not EARLIEST <= utc <= LATEST:
        raise ValueError(f"time must lie between {EARLIEST.date()} and {LATEST.date()} UTC")
    return utc


Text = Annotated[str, AfterValidator(_encodable)]
Time = Annotated[datetime, AfterValidator(_in_calendar)]
TimeAdapter = TypeAdapter(Time)  # a query parameter's time, checked as a body's is
Count = Annotated[int, Field(ge=1, strict=True)]  # strict: true is not 1


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- one memory group (the stream format, validated strictly at the HTTP boundary) ---------------


class MemoryIn(StreamMemory):
    model_config = ConfigDict(extra="forbid")

    memory_id: Text = Field(min_length=1, max_length=200)
    author: Text = Field(max_length=200)
    content: Text = Field(min_length=1)  # its length is capped by serving.max_memory_chars (413)


class GroupRequest(MemoryGroup):
    """A stream line as an HTTP body; how many memories it may hold is ``serving.max_group_memories`` (413)."""

    model_config = ConfigDict(extra="forbid")

    team: Text = Field(min_length=1, max_length=64)
    group_id: Text = Field(min_length=1, max_length=200)
    time: Time
    memories: list[MemoryIn] = Field(min_length=1)


# -- graphs (HGMem) -------------------------------------------------------------------------


class QueryRequest(_Request):
    question: Text = Field(min_length=1, max_length=4000)
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


class HistoryDecision(DecisionOut):
    group_id: str = Field(description="the group whose update made this decision")
    decided_at: datetime = Field(description="that group's time (the stream's clock, not the server's)")


class HistoryResponse(BaseModel):
    """One memory as it stands, and every maintenance decision on it, in the order they were applied."""

    team: str
    memory: MemoryOut
    decisions: list[HistoryDecision]


class MemoriesResponse(BaseModel):
    team: str
    as_of: datetime | None
    memories: list[MemoryOut] = Field(description="in write order: the live bank, or rebuilt as of a time")


class SearchRequest(_Request):
    query: Text = Field(min_length=1, max_length=4000)
    k: Count = Field(10, description="at most serving.max_k (default 100)")
    as_of: Time | None = Field(None, description="search the bank as it stood then (default: now)")


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
    question: Text = Field(min_length=1, max_length=4000)
    as_of: Time | None = None
    k: Count = Field(10, description="at most serving.max_k (default 100)")
    evidence: Count = Field(5, le=50)


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
    role: Literal["system", "user", "assistant"]
    content: Text


class ChatCompletionRequest(_Request):
    """The OpenAI chat body, as far as this service serves it: the fields below, and no others reach vLLM.

    ``max_tokens`` is at most ``serving.max_chat_tokens``, which is also what a call without it runs with.
    """

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: Count | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = Field(None, strict=True)
    stop: Text | Annotated[list[Text], Field(max_length=4)] | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
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


# -- browsing a graph (the web page's read-only views) ----------------------------------------


class GraphInfo(BaseModel):
    graph: str
    counts: dict[str, int] = Field(default_factory=dict, description="chunks, entities, relations")
    embedder: str | None = None


class GraphsResponse(BaseModel):
    graphs: list[GraphInfo]


class EntityOut(BaseModel):
    entity_id: str
    name: str
    type: str
    description: str


class EntityHit(EntityOut):
    score: float


class EntitySearchResponse(BaseModel):
    graph: str
    query: str
    hits: list[EntityHit]


class RelationOut(BaseModel):
    relation_id: str
    source_id: str
    target_id: str
    description: str
    weight: float
    chunk_ids: list[str]


class ChunkOut(BaseModel):
    chunk_id: str
    doc_id: str
    text: str


class ChunksResponse(BaseModel):
    graph: str
    chunks: list[ChunkOut] = Field(description="in the order asked; ids the graph lacks are left out")


class EntityView(BaseModel):
    """One entity and its one-hop neighbourhood: the relations touching it, the entities at their
    other ends, and the chunks the entity was extracted from."""

    graph: str
    entity: EntityOut
    neighbours: list[EntityOut]
    relations: list[RelationOut] = Field(description="heaviest first, at most serving.max_k")
    chunks: list[ChunkOut]


class WhoAmI(BaseModel):
    """What a token reaches, so a client can offer only that."""

    team: str | None = Field(description="the team a team token belongs to")
    reader: bool = Field(description="whether it reads graphs and traces")
