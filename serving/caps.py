"""Per-request work caps, each a ``serving.*`` setting its refusal names.

Pydantic checks the body's shape; these check what the replica's settings allow,
which a static schema cannot know. A group too big is 413 (the body is too large
for this service), a ``k`` or ``max_tokens`` over its cap is 422.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memgraft.collab.types import MemoryGroup
from memgraft.models.llm.base import check_fits
from memgraft.models.llm.tokens import TokenCounter
from serving.settings import ServingSettings


_MESSAGE_TOKENS = 3  # a chat template's markers around each message (SmolLM2's: "<|im_start|>", role, newline)


class TooLarge(ValueError):
    """A group with more memories, or a memory with more text, than the service takes: 413."""


class OverLimit(ValueError):
    """A number over its cap (``k``, ``max_tokens``): 422."""


def check_group(serving: ServingSettings, group: MemoryGroup, now: datetime | None = None) -> None:
    check_time(serving, group, now)
    n, cap = len(group.memories), serving.max_group_memories
    if n > cap:
        raise TooLarge(f"a group holds at most {cap} memories (serving.max_group_memories); this one has {n}: "
                       f"send it as several groups")
    cap = serving.max_memory_chars
    for m in group.memories:
        if len(m.content) > cap:
            raise TooLarge(f"memory {m.memory_id!r} has {len(m.content)} characters, over serving.max_memory_chars "
                           f"({cap})")


def check_time(serving: ServingSettings, group: MemoryGroup, now: datetime | None = None) -> None:
    """A group dated past the server's clock by more than ``serving.max_future_s``: 422. Groups apply in time
    order, so a group dated far ahead would leave the team unable to write anything dated before it."""
    now = now or datetime.now(timezone.utc)
    when = group.time if group.time.tzinfo else group.time.replace(tzinfo=timezone.utc)
    ahead = (when - now).total_seconds()
    if ahead > serving.max_future_s:
        limit = now + timedelta(seconds=serving.max_future_s)
        raise OverLimit(f"a group's time is at most serving.max_future_s ({serving.max_future_s:g} s) ahead of the "
                        f"server's clock: dated after {limit.isoformat(timespec='seconds')}, this one is refused")


def check_k(serving: ServingSettings, k: int, field: str = "k") -> None:
    if k > serving.max_k:
        raise OverLimit(f"{field} is at most {serving.max_k} (serving.max_k), not {k}")


def chat_tokens(serving: ServingSettings, max_tokens: int | None) -> int:
    """The ``max_tokens`` a chat call runs with: the client's, within ``serving.max_chat_tokens``, or that cap."""
    cap = serving.max_chat_tokens
    if max_tokens is not None and max_tokens > cap:
        raise OverLimit(f"max_tokens is at most {cap} (serving.max_chat_tokens), not {max_tokens}")
    return cap if max_tokens is None else max_tokens


def check_prompt(counter: TokenCounter, messages: list[tuple[str, str]], max_tokens: int,
                 context_tokens: int | None) -> None:
    """A chat prompt longer than the model's context less ``max_tokens``: 413, counted with the model's
    tokenizer, before it reaches the LLM (a 30,000-token prompt held the model for every team for minutes)."""
    if context_tokens is None:
        return
    total = sum(counter.count(content) + counter.count(role) + _MESSAGE_TOKENS for role, content in messages)
    check_fits(total, max_tokens, context_tokens, f"counted with {counter.name}")
