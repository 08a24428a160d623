"""Which pieces of retrieved evidence contradict each other, for the resolver.

The resolver asks "do these two maintained texts contradict?" for every pair it holds.
An updater policy already answers exactly that question for one target against a
newer memory, so the pairs are judged by a policy, all of a question's pairs in one
batch (one LLM call for the LLM policy, none for the rules policy).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Sequence

from memgraft.collab.types import Memory, Relation


class ConflictJudge:
    def __init__(self, policy: Any):
        self.policy = policy

    def pairs(self, memories: Sequence[Memory], at: datetime) -> set[frozenset[str]]:
        """The id pairs among ``memories`` judged contradictory (the older judged against the newer)."""
        from memgraft.collab.maintain.judgement import Target

        targets, keys = [], []
        for i, a in enumerate(memories):
            for b in memories[i + 1:]:
                older, newer = (a, b) if (a.time, a.memory_id) <= (b.time, b.memory_id) else (b, a)
                targets.append(Target(level="inter", memory=older, against=(newer,), at=at))
                keys.append(frozenset((a.memory_id, b.memory_id)))
        if not targets:
            return set()
        return {key for key, j in zip(keys, self.policy.judge(targets)) if j.relation == Relation.contradiction}

    def contradicts(self, memories: Sequence[Memory], at: datetime) -> Callable[[Memory, Memory], bool]:
        """A ``contradicts(a, b)`` for the resolver, judged once for all pairs of ``memories``."""
        found = self.pairs(memories, at)
        return lambda a, b: frozenset((a.memory_id, b.memory_id)) in found
