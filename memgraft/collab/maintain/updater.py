"""HiCoMER's updater: one group G_t in, its memories and every maintenance decision committed together.

For G_t (DESIGN.md, HiCoMER):

1. Embed the group's memories; the query is their weighted mean vector, each team
   memory counting ``team_weight`` times (3 by default). Team memories are what
   outdates earlier memories, and a plain mean lets a group's one or two unrelated
   notes pull the query away from them: on generated streams with K = 10 a plain
   mean left 6-10% of the memories the gold outdates unrevised (never retrieved),
   weight 3 about 0.3%.
2. H_t = the top ``history_top_k`` earlier memories of the team by cosine, among the
   *valid* ones: an outdated memory needs no more maintenance (the gold never judges
   one), and judging it again would stack a second "outdated" note on its text.
3. Intra: each individual memory of G_t is judged against G_t's team memories (team
   memories are authoritative). A group without team memories has no intra step.
4. Inter: each memory of H_t is judged against the *maintained* group: its team
   memories and the individual memories the intra step kept. An individual memory
   revised in step 3 is outdated from birth, so it outdates nothing.
5. Every judgement becomes a :class:`Decision` (keeps too: the log holds every
   decision, as the gold does) and the group and its decisions are written in one
   short transaction.

All reads and every policy call happen before that transaction opens, so parallel
teams sharing one SQLite file never wait on a write lock while a model thinks. Open
the bank with a :class:`MemoEmbedder` and the vectors the transaction stores (the
group's texts, the revised texts) are the ones computed here, looked up, not
re-embedded under the lock.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from memgraft.collab.bank import BankError, GroupAlreadyApplied, MemoryBank, StaleDecision
from memgraft.collab.data import rewords
from memgraft.collab.maintain import carry, described, subject, topic
from memgraft.collab.maintain.judgement import Judgement, Target, UpdatePolicy, may_revise, normalise
from memgraft.collab.types import Action, Decision, Memory, MemoryGroup, Relation
from memgraft.config import HiCoMERSettings
from memgraft.ids import content_hash
from memgraft.models.embedder import Embedder
from memgraft.models.llm.session import StructuredOutputError, Usage

PLAN_ATTEMPTS = 2  # a decision made stale by a concurrent writer of the same team is re-planned once


@dataclass
class UpdateReport:
    team: str
    group_id: str
    decisions: list[Decision] = field(default_factory=list)
    n_history: int = 0  # |H_t|
    seconds: float = 0.0
    usage: Usage | None = None  # the policy's model calls for this group (None: the policy uses no model)
    skipped: bool = False  # already applied: nothing judged, nothing written

    @property
    def revisions(self) -> int:
        return sum(d.action is Action.revise for d in self.decisions)


class MemoEmbedder:
    """An embedder that remembers its recent texts' vectors (LRU), so a text is embedded once per process."""

    def __init__(self, inner: Embedder, size: int = 8192):
        self.inner, self.size = inner, size
        self.name, self.dim = inner.name, inner.dim
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for t, v in zip(missing, np.asarray(self.inner.encode(missing), dtype=np.float32)):
                self._memo[t] = v
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            self._memo.move_to_end(t)
            out[i] = self._memo[t]
        while len(self._memo) > self.size:
            self._memo.popitem(last=False)
        return out


class Updater:
    """Applies groups to a bank through a policy; cheap to build (models live in the policy and the bank)."""

    def __init__(self, bank: MemoryBank, policy: UpdatePolicy, settings: HiCoMERSettings, *,
                 team_weight: float = 3.0):
        if bank.embedder is None:
            raise BankError(f"{bank.path}: the updater retrieves earlier memories by embedding; open the bank "
                            f"with an embedder")
        self.bank, self.policy, self.settings = bank, policy, settings
        self.team_weight = team_weight

    def apply(self, group: MemoryGroup) -> UpdateReport:
        """Judge and commit one group; a group already in the bank is skipped (resume after a kill)."""
        t0 = time.perf_counter()
        report = UpdateReport(group.team, group.group_id)
        if self.bank.is_applied(group.team, group.group_id):
            report.skipped = True
            return report
        usage = getattr(self.policy, "usage", None)
        before = usage.copy() if isinstance(usage, Usage) else None
        with self.bank.team_turn(group.team) as turn:  # other processes' writers of the team wait for this group
            if turn and self.bank.is_applied(group.team, group.group_id):  # applied by one while this one waited
                report.skipped = True
                return report
            for attempt in range(PLAN_ATTEMPTS):
                decisions, n_history = self.plan(group)
                try:
                    self.bank.apply_group(group, decisions)
                    break
                except GroupAlreadyApplied:  # another process applied it meanwhile: theirs stands
                    report.skipped = True
                    decisions = []
                    break
                except StaleDecision:
                    if attempt + 1 == PLAN_ATTEMPTS:
                        raise
        report.decisions, report.n_history = decisions, n_history
        if before is not None and isinstance(usage, Usage):
            report.usage = usage.minus(before)
        report.seconds = time.perf_counter() - t0
        return report

    # -- planning: reads and policy calls only ---------------------------------------------
    def plan(self, group: MemoryGroup) -> tuple[list[Decision], int]:
        """The group's decisions against the committed bank, and |H_t|; writes nothing."""
        new = self._new_memories(group)
        weights = [self.team_weight if m.type == "team" else 1.0 for m in new]
        history = self.history(group.team, np.stack([m.embedding for m in new]), weights,
                               per_memory=self.settings.history_per_memory)
        team_mems = tuple(m for m in new if m.type == "team")
        words = topic.team_words(self.bank, group.team) if getattr(self.policy, "topic_from", 0) else None  # the judge's
        intra = [Target("intra", m, team_mems, group.time, words) for m in new if m.type == "individual"] \
            if team_mems else []
        intra_j = self._judge(group, intra)
        revised = {t.memory.memory_id for t, j in zip(intra, intra_j) if j.action is Action.revise}
        maintained = tuple(m for m in new if m.memory_id not in revised)
        inter = [Target("inter", h, maintained, group.time, words) for h in history] if maintained else []
        inter_j = self._judge(group, inter)
        if self.settings.carry_overruled:
            inter_j = self._carry(intra, intra_j, inter, inter_j)
        decisions = [self._decision(group, i, t, j, self.policy.name)
                     for i, (t, j) in enumerate(zip(intra + inter, intra_j + inter_j))]
        changed = [d.after for d in decisions if rewords(d.before, d.after)]  # a label alone keeps the vector
        if changed:
            self.bank.embedder.encode(changed)  # a MemoEmbedder keeps them for the write
        return decisions, len(history)

    def _carry(self, intra: list[Target], intra_j: list[Judgement], inter: list[Target],
               inter_j: list[Judgement]) -> list[Judgement]:
        """Earlier memories that state, word for word, a value the intra step just overruled are superseded
        by the same memory (:mod:`memgraft.collab.maintain.carry`), when the judge kept them."""
        found = carry.overruled([(t.memory, by) for t, j in zip(intra, intra_j) if j.action is Action.revise
                                 for by in t.against if by.memory_id == j.reference])
        if not found:
            return inter_j
        out = []
        for t, j in zip(inter, inter_j):
            o = carry.carried(t.memory, found) if j.action is Action.keep and t.memory.valid else None
            if o is not None and self.settings.judge_subject_first and (
                    (subject.another_subject(t.memory.maintained, o.by.maintained)
                     and not described.described(t.memory.maintained))
                    or topic.other_question_on_topic(t.memory.maintained, o.by.maintained)
                    or topic.asked_apart(t.memory.maintained, o.by.maintained)):
                o = None  # the value is another subject's or question's too: "San Francisco" is not only Holtzman's,
                # "Brazil" answers who has won the most world cups as well as where the previous world cup was held,
                # "Michael Phelps" who carried the flag as well as who holds the most medals; a memory that names
                # its subject by describing it ("the institute founded by Hans Elsässer") is not another subject's
            if o is not None and may_revise(t.memory, o.by):
                j = normalise(t, Relation.contradiction, Action.revise, "",
                              f"states {' '.join(o.value)!r}, which {o.note.memory_id} stated and "
                              f"{o.by.memory_id} overruled", reference=o.by)
            out.append(j)
        return out

    def history(self, team: str, vectors: np.ndarray, weights: Sequence[float] | None = None, *,
                per_memory: int = 0) -> list[Memory]:
        """H_t: the earlier valid memories nearest the group (its normalised, weighted mean vector), then
        each new memory's own ``per_memory`` nearest (a group of many subjects' records has a mean
        vector near none of them: on real streams the mean alone left superseded records unjudged)."""
        found: dict[str, Memory] = {}
        query = np.average(vectors, axis=0, weights=weights)
        norm = float(np.linalg.norm(query))
        if norm > 0.0 and self.settings.history_top_k > 0:
            found.update((m.memory_id, m) for m, _ in
                         self.bank.search(team, query / norm, self.settings.history_top_k, valid_only=True))
        if per_memory > 0 and len(vectors) > 1:
            for vec in vectors:
                found.update((m.memory_id, m) for m, _ in self.bank.search(team, vec, per_memory, valid_only=True)
                             if m.memory_id not in found)
        return list(found.values())

    def _new_memories(self, group: MemoryGroup) -> list[Memory]:
        vecs = np.asarray(self.bank.embedder.encode([m.content for m in group.memories]), np.float32)  # type: ignore[union-attr]
        return [Memory(memory_id=m.memory_id, team=group.team, group_id=group.group_id, type=m.type, author=m.author,
                       original=m.content, maintained=m.content, time=group.time, relation=None, action=None,
                       valid=True, maintained_at=group.time, embedding=vecs[i])
                for i, m in enumerate(group.memories)]

    def _judge(self, group: MemoryGroup, targets: list[Target]) -> list[Judgement]:
        if not targets:
            return []
        try:
            out = self.policy.judge(targets)
        except StructuredOutputError as err:
            raise StructuredOutputError(f"team {group.team!r}, group {group.group_id!r} not applied: {err}") from err
        if len(out) != len(targets):
            raise RuntimeError(f"policy {self.policy.name!r} returned {len(out)} judgements for {len(targets)} targets")
        return out

    @staticmethod
    def _decision(group: MemoryGroup, index: int, target: Target, j: Judgement, decided_by: str) -> Decision:
        m = target.memory
        revise = j.action is Action.revise
        return Decision(
            # the id scheme of GroupTransaction.decide: team, group, memory, level, position in the group
            decision_id="dec-" + content_hash(group.team, group.group_id, m.memory_id, target.level, index),
            team=group.team, memory_id=m.memory_id, group_id=group.group_id, decided_at=group.time,
            level=target.level, relation=j.relation, action=j.action, before=m.maintained,
            after=j.maintained if revise else m.maintained, valid_before=m.valid,
            valid_after=False if revise else m.valid, decided_by=decided_by, reason=j.reason)
