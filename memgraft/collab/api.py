"""The Python API of HiCoMER: one object over a bank that adds groups, searches and answers.

    memory = CollabMemory.open("team.sqlite", load_settings("local"))
    memory.add_group({"team": "lab", "group_id": "g1", "time": "2025-01-06T09:00:00", "memories": [...]})
    hits = memory.search("lab", "which assay do we use?", as_of="2025-01-07T10:00:00")
    result = memory.answer("lab", "which assay do we use?")

Models load on first use: adding groups with the rules updater never loads an LLM, and
searching never loads the updater.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

from memgraft.collab.bank import MemoryBank, open_bank
from memgraft.collab.types import Memory, MemoryGroup, as_utc
from memgraft.config import Settings
from memgraft.models.embedder import Embedder
from memgraft.models.llm.base import LLM
from memgraft.models.reranker import Reranker


@dataclass
class Answer:
    question: str
    answer: str
    evidence: list[Memory]
    dropped: list[tuple[Memory, Memory, str]]  # (dropped, beaten by, why)
    reranker: str
    usage: Any = None


@dataclass
class CollabMemory:
    bank: MemoryBank
    settings: Settings
    embedder: Embedder
    llm: LLM | None = None
    reranker: Reranker | None = None
    scorer: Any = None  # a ValidityScorer or StateValidity (open's default), or None: without the validity score
    policy_name: str | None = None  # "judge", "rules" or "llm"; default: settings.hicomer.updater_policy
    _policy: Any = field(default=None, repr=False)
    _judge: Any = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | Path, settings: Settings, *, embedder: Embedder | None = None, llm: LLM | None = None,
             scorer_path: str | Path | None = None, policy: str | None = None) -> "CollabMemory":
        from memgraft.collab.maintain.updater import MemoEmbedder
        from memgraft.models.embedder import load_embedder

        # Memoised: the updater's plan embeds a group, and the bank's write reuses those vectors.
        embedder = MemoEmbedder(embedder or load_embedder(settings))
        from memgraft.collab.retrieve.validity import make_validity

        h = settings.hicomer
        scorer = make_validity(str(scorer_path) if scorer_path else h.validity_scorer, h.validity_state_logit)
        return cls(open_bank(path, embedder), settings, embedder, llm=llm, scorer=scorer, policy_name=policy)

    def close(self) -> None:
        self.bank.close()

    # -- writing -------------------------------------------------------------------------
    def add_group(self, group: MemoryGroup | Mapping[str, Any]):
        """Run one group through the updater and commit it with its decisions; returns the update report."""
        from memgraft.collab.maintain.updater import Updater

        g = group if isinstance(group, MemoryGroup) else MemoryGroup.model_validate(group)
        return Updater(self.bank, self.policy, self.settings.hicomer).apply(g)

    @property
    def policy(self):
        if self._policy is None:
            from memgraft.collab.maintain.policies import make_policy

            name = self.policy_name or self.settings.hicomer.updater_policy
            # A trained updater (hicomer.updater_model) loads on its own; else the updater shares the answering LLM.
            shared = self._llm() if name == "llm" and not self.settings.hicomer.updater_model else None
            self._policy = make_policy(self.settings, kind=name, llm=shared, embedder=self.embedder)
        return self._policy

    # -- reading -------------------------------------------------------------------------
    def search(self, team: str, query: str, *, k: int = 10, as_of: datetime | str | None = None):
        """HiCoMER's validity-aware ranking of a team's memories, as of a time (default: now)."""
        from memgraft.collab.retrieve.retriever import ValidityRetriever

        retriever = ValidityRetriever(self.bank, self.embedder, self._reranker(), self.scorer, self.settings.hicomer)
        return retriever.search(team, query, k=k, as_of=parse_time(as_of))

    def answer(self, team: str, question: str, *, as_of: datetime | str | None = None, k: int = 10,
               evidence: int = 5) -> Answer:
        """Retrieve, drop the lower-priority side of each contradiction, answer from what survives."""
        from memgraft.collab.answer.grounded import answer_question
        from memgraft.collab.answer.conflicts import ConflictJudge
        from memgraft.collab.maintain.policies import make_policy
        from memgraft.collab.answer.resolve import resolve
        from memgraft.models.llm.session import LLMSession
        from memgraft.models.llm.tokens import token_counter

        when = parse_time(as_of)
        hits = self.search(team, question, k=k, as_of=when)
        t0, t_now = self.bank.time_span(team, when)
        if self._judge is None:  # conflicts among the evidence: hicomer.conflict_judge (the pair judge by default)
            kind = self.settings.hicomer.conflict_judge
            shared = self._llm() if kind == "llm" and not self.settings.hicomer.updater_model else None
            self._judge = ConflictJudge(make_policy(self.settings, kind=kind, llm=shared, embedder=self.embedder,
                                                    second_opinion=False))
        memories = [h.memory for h in hits]
        result = resolve(memories, self._judge.contradicts(memories, t_now), settings=self.settings.hicomer,
                         t0=t0, t_now=t_now)
        kept = list(result.kept)[:evidence]
        reply = answer_question(LLMSession(self._llm(), self.settings.generation), question, kept,
                                max_evidence_tokens=self.settings.hicomer.answer_evidence_tokens,
                                counter=token_counter(self.settings.models.llm, str(self.settings.cache_path)))
        return Answer(question, reply.answer, kept, [tuple(d) for d in result.dropped], self._reranker().name,
                      getattr(reply, "usage", None))

    @property
    def semantic_source(self) -> str:
        """Where search's S_sem comes from (the cosine fallback names itself), as the retriever reports it."""
        from memgraft.collab.retrieve.retriever import ValidityRetriever

        return ValidityRetriever(self.bank, self.embedder, self._reranker(), self.scorer,
                                 self.settings.hicomer).reranker_name

    def memories(self, team: str, *, as_of: datetime | str | None = None) -> list[Memory]:
        return self.bank.memories(team, as_of=parse_time(as_of))

    # -- models, on first use ----------------------------------------------------------------
    def _llm(self) -> LLM:
        if self.llm is None:
            from memgraft.models.llm.factory import load_llm

            self.llm = load_llm(self.settings)
        return self.llm

    def _reranker(self) -> Reranker:
        if self.reranker is None:
            from memgraft.models.reranker import load_reranker

            self.reranker = load_reranker(self.settings, self.embedder)
        return self.reranker


def parse_time(value: datetime | str | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return None if value is None else as_utc(value)
    return as_utc(datetime.fromisoformat(value))


def memory_rows(memories: Sequence[Memory]) -> list[dict[str, Any]]:
    """What the CLI shows per memory: type, time, original and maintained text, validity."""
    return [m.as_dict() for m in memories]
