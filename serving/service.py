"""What each endpoint does, as plain blocking Python over the library (no Ray, no HTTP).

The ingress runs these methods in worker threads; tests and the benchmark can run
them with in-process models. Graph stores and team banks are opened on first use
and kept: a graph is reloaded when its manifest changes (an ``--append`` build),
a team's bank is its own SQLite file, ``<banks_dir>/<team>.sqlite``.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memgraft.collab.api import CollabMemory
from memgraft.collab.bank import MemoryBank
from memgraft.collab.types import MemoryGroup
from memgraft.config import Settings
from memgraft.graph.store import GraphStore
from memgraft.hgmem.methods import record_answer
from memgraft.models.embedder import Embedder
from memgraft.models.llm.base import LLM
from memgraft.models.reranker import Reranker
from serving import schemas
from serving.names import bank_path, graph_path, trace_path
from serving.settings import ServingSettings


class NotFound(LookupError):
    """A graph, team bank or trace that does not exist: 404."""


class AlreadyApplied(RuntimeError):
    """The group is in the bank already; nothing was judged or written: 409."""


class TeamMismatch(ValueError):
    """A group whose ``team`` field names another team than the URL: 422."""


@dataclass
class Models:
    """The protocol objects the library takes: proxies to deployments in the ingress, models in tests."""

    llm: LLM
    embedder: Embedder
    reranker: Reranker
    scorer: Any = None  # a ValidityScorer (or its proxy), or None: search without S_val
    scorer_source: str | None = None


class Service:
    def __init__(self, settings: Settings, serving: ServingSettings, models: Models):
        self.settings, self.serving, self.models = settings, serving, models
        self._lock = threading.Lock()
        self._graphs: dict[str, tuple[int, GraphStore]] = {}
        self._teams: dict[str, CollabMemory] = {}

    # -- sources, as every response names them ---------------------------------------------
    @property
    def validity_source(self) -> str:
        if self.models.scorer is None:
            return "none: no validity scorer configured (serving.scorer_path), so S_final = S_sem"
        return f"validity scorer {self.models.scorer_source or '(in process)'}"

    def health(self) -> schemas.Health:
        m = self.models
        return schemas.Health(profile=self.settings.profile, llm=m.llm.name, embedder=m.embedder.name,
                              reranker=m.reranker.name, validity=self.validity_source)

    # -- graphs ------------------------------------------------------------------------------
    def graph(self, name: str) -> GraphStore:
        folder = graph_path(self.serving.graphs_dir, name)
        manifest = folder / "manifest.json"
        try:
            stamp = manifest.stat().st_mtime_ns
        except OSError:
            raise NotFound(f"no graph {name!r} (graphs are folders under the service's graphs_dir)") from None
        with self._lock:
            cached = self._graphs.get(name)
            if cached and cached[0] == stamp:
                return cached[1]
        store = GraphStore.load(str(folder), self.models.embedder)
        with self._lock:
            self._graphs[name] = (stamp, store)
        return store

    def query(self, graph: str, body: schemas.QueryRequest) -> schemas.QueryResponse:
        store = self.graph(graph)
        record = {"id": uuid.uuid4().hex, "question": body.question}
        # Raises: the error handlers tell a lost replica (503) from a model's bad output (502) or a timeout (504).
        row, outcome = record_answer(record, body.method, store, self.models.llm, self.settings,
                                     self.serving.traces_dir)
        return schemas.QueryResponse(
            graph=graph, method=body.method, question=body.question, answer=row["answer"],
            trace_id=Path(row["trace"]).name.removesuffix(".json"), final_memory=outcome.trace.get("final_memory"),
            steps=row["steps"], llm_calls=row["llm_calls"], prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"], seconds=row["seconds"])

    def trace(self, trace_id: str, html: bool = False) -> Any:
        path = trace_path(self.serving.traces_dir, trace_id)
        if not path.exists():
            raise NotFound(f"no trace {trace_id!r}")
        if not html:
            return json.loads(path.read_text())
        page = path.with_suffix(".html")
        if not page.exists():
            raise NotFound(f"trace {trace_id!r} has no HTML page: its method keeps no working memory")
        return page.read_text(encoding="utf-8")

    # -- teams -------------------------------------------------------------------------------
    def team(self, team: str, *, create: bool = False) -> CollabMemory:
        with self._lock:
            memory = self._teams.get(team)
            if memory is not None:
                return memory
            path = bank_path(self.serving.banks_dir, team)
            if not create and not path.exists():
                raise NotFound(f"team {team!r} has no memories yet (add a group first)")
            m = self.models
            memory = CollabMemory(MemoryBank(path, m.embedder), self.settings, m.embedder, llm=m.llm,
                                  reranker=m.reranker, scorer=m.scorer)
            self._teams[team] = memory
            return memory

    def semantic_source(self, memory: CollabMemory) -> str:
        return memory.semantic_source

    def add_group(self, team: str, group: MemoryGroup) -> schemas.GroupResponse:
        if group.team != team:
            raise TeamMismatch(f"the group's team {group.team!r} does not match the URL's team {team!r}")
        memory = self.team(team, create=True)
        report = memory.add_group(group)
        if report.skipped:
            raise AlreadyApplied(f"team {team!r}: group {group.group_id!r} is already applied")
        return schemas.GroupResponse(
            team=team, group_id=group.group_id, policy=memory.policy.name, history=report.n_history,
            revisions=report.revisions, seconds=round(report.seconds, 4),
            decisions=[schemas.DecisionOut(
                decision_id=d.decision_id, memory_id=d.memory_id, level=d.level, relation=str(d.relation),
                action=str(d.action), before=d.before, after=d.after, valid_before=d.valid_before,
                valid_after=d.valid_after, decided_by=d.decided_by, reason=d.reason) for d in report.decisions])

    def search(self, team: str, body: schemas.SearchRequest) -> schemas.SearchResponse:
        memory = self.team(team)
        hits = memory.search(team, body.query, k=body.k, as_of=body.as_of)
        return schemas.SearchResponse(
            team=team, query=body.query, as_of=body.as_of, semantic_source=self.semantic_source(memory),
            validity_source=self.validity_source,
            hits=[schemas.HitOut(memory=schemas.MemoryOut.of(h.memory), dense=h.dense, semantic=h.semantic,
                                 validity=h.validity, score=h.score) for h in hits])

    def answer(self, team: str, body: schemas.AnswerRequest) -> schemas.AnswerResponse:
        memory = self.team(team)
        result = memory.answer(team, body.question, as_of=body.as_of, k=body.k, evidence=body.evidence)
        usage = result.usage
        return schemas.AnswerResponse(
            team=team, question=body.question, answer=result.answer,
            evidence=[schemas.MemoryOut.of(m) for m in result.evidence],
            dropped=[schemas.Dropped(memory=schemas.MemoryOut.of(lost), beaten_by=schemas.MemoryOut.of(won), why=why)
                     for lost, won, why in result.dropped],
            semantic_source=self.semantic_source(memory), validity_source=self.validity_source,
            usage=None if usage is None else schemas.Usage(calls=usage.calls, prompt_tokens=usage.prompt_tokens,
                                                           completion_tokens=usage.completion_tokens))

    def close(self) -> None:
        with self._lock:
            for memory in self._teams.values():
                memory.close()
            self._teams.clear()
