"""The paper's missing baselines, adapted to the same stream and query interface (issue 14).

* **Mem0-style memory** (:class:`Mem0Policy`): as Mem0 does for each new fact, an LLM
  looks at the similar stored memories and picks an operation for each: NOOP (still
  true), UPDATE (the new fact supersedes it) or DELETE (the new fact says it is no
  longer so); ADD is the new fact itself, always stored. It runs as an updater policy,
  so the same retrieval of similar memories feeds it and its decisions are logged; it
  has no notion of authority: an individual note deletes a team protocol as readily as
  the reverse. Retrieval is plain dense over what survives.
* **Self-RAG-style reflection** (:class:`SelfReflectRetriever`): nothing is maintained;
  at question time the LLM judges each retrieved memory, given the others, as still
  valid or not, and only the ones it keeps are ranked (dense order).
* **G-Memory-style hierarchical retrieval** (:class:`HierarchicalRetriever`): first the
  team's groups most relevant to the question (a group's score is its memories' mean
  relevance), then the memories within them. G-Memory's LLM-written insight tier is
  left out: this is its query -> interaction hierarchy, without a model.

The prompts are ours.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Sequence

from pydantic import BaseModel, Field

from memgraft.collab.evaluate.baselines import DenseRetriever, Ranked
from memgraft.collab.maintain.judgement import Judgement, Target, normalise
from memgraft.collab.maintain.policies import judge_structured
from memgraft.collab.types import Action, Memory, Relation, stamp
from memgraft.models.llm.base import LLM, generate_structured
from memgraft.models.llm.session import Usage

if TYPE_CHECKING:
    from memgraft.collab.bank import MemoryBank
    from memgraft.config import GenerationSettings


class MemoryOperation(BaseModel):
    operation: Literal["NOOP", "UPDATE", "DELETE"]
    reason: str = Field("", max_length=300)


class StillValid(BaseModel):
    valid: bool
    reason: str = Field("", max_length=300)


MEM0_PROMPT = """You keep a team's memory up to date. A stored memory and the newer facts are below.
Choose what happens to the STORED memory:
- NOOP: it is still true alongside the newer facts (they agree, or are about something else);
- UPDATE: a newer fact gives a new value for the same thing, so the stored one is superseded;
- DELETE: a newer fact says the stored one no longer holds.
Answer in JSON.

Stored memory ({when}): {memory}

Newer facts ({at}):
{facts}"""

REFLECT_PROMPT = """A question, and memories a team wrote over time. Decide whether the memory marked TARGET
is still valid at the question's time, or whether another memory below supersedes or contradicts it.
Answer in JSON.

Question ({at}): {question}

Memories:
{others}

TARGET ({when}): {memory}"""


def _line(m: Memory) -> str:
    return f"- [{getattr(m.type, 'value', m.type)}, {stamp(m.time)}] {m.maintained}"


class Mem0Policy:
    """The Mem0-style operation choice as an updater policy: UPDATE and DELETE outdate the stored memory."""

    def __init__(self, llm: LLM, generation: "GenerationSettings"):
        self.llm, self.generation = llm, generation
        self.name = f"mem0:{llm.name.lower()}"
        self.usage = Usage()

    def judge(self, targets: Sequence[Target]) -> list[Judgement]:
        if not targets:
            return []
        prompts = [[{"role": "user", "content": MEM0_PROMPT.format(
            when=stamp(t.memory.time), memory=t.memory.maintained, at=stamp(t.at),
            facts="\n".join(_line(m) for m in t.against))}] for t in targets]
        out = []
        for t, v in zip(targets, judge_structured(self, targets, prompts, MemoryOperation, max_new_tokens=256)):
            op = v.operation
            relation = Relation.compatible if op == "NOOP" else Relation.contradiction
            action = Action.keep if op == "NOOP" else Action.revise
            out.append(normalise(t, relation, action, "", f"mem0 {op}: {v.reason}".strip()))
        return out


class SelfReflectRetriever:
    """Dense top-N, then the LLM keeps the memories it judges still valid (no maintenance at all)."""

    name = "self-rag"

    def __init__(self, bank: "MemoryBank", llm: LLM, generation: "GenerationSettings", top_n: int = 10):
        self.dense, self.llm, self.generation, self.top_n = DenseRetriever(bank), llm, generation, top_n
        self.usage = Usage()

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        hits = self.dense.retrieve(team, question, max(k, self.top_n), as_of)
        if not hits:
            return []
        at = stamp(as_of) if as_of else "now"
        prompts = [[{"role": "user", "content": REFLECT_PROMPT.format(
            at=at, question=question, others="\n".join(_line(o.memory) for o in hits if o is not h) or "(none)",
            when=stamp(h.memory.time), memory=h.memory.maintained)}] for h in hits]
        g = self.generation
        results = generate_structured(self.llm, prompts, StillValid, retries=g.json_retries,
                                      max_new_tokens=min(g.max_new_tokens, 256), temperature=g.temperature,
                                      salvage_cut=g.salvage_cut_replies)
        for r in results:
            self.usage.add(Usage.of(r))
        # an answer that stays malformed keeps the memory: reflection that failed removes nothing
        return [h for h, r in zip(hits, results) if r.value is None or r.value.valid][:k]


class HierarchicalRetriever:
    """The most relevant groups first (mean relevance of their memories), then the memories within them."""

    name = "g-memory"

    def __init__(self, bank: "MemoryBank", groups: int = 3):
        self.bank, self.groups = bank, groups

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        everything = self.bank.memories(team, as_of=as_of)
        hits = self.bank.search(team, question, len(everything), as_of=as_of) if everything else []
        by_group: dict[str, list[tuple[Memory, float]]] = defaultdict(list)
        for m, s in hits:
            by_group[m.group_id].append((m, s))
        ranked_groups = sorted(by_group.values(), key=lambda ms: -sum(s for _, s in ms) / len(ms))
        out: list[Ranked] = []
        for members in ranked_groups[: self.groups]:
            out += [Ranked(m, s) for m, s in members]
        out.sort(key=lambda r: -r.score)
        return out[:k]
