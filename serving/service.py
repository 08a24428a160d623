"""What each endpoint does, as plain blocking Python over the library (no Ray, no HTTP).

The ingress runs these methods in worker threads; tests and the benchmark can run
them with in-process models. Graph stores and team banks are opened on first use
and kept: a graph is reloaded when its manifest changes (an ``--append`` build),
a team's bank is its own SQLite file, ``<banks_dir>/<team>.sqlite``, or, with
``serving.banks_url``, its rows in one PostgreSQL database shared by every replica
(each team's connection bound to that team, so it sees no other team's rows).

Writes to one team are serialised here (one lock per team), so parallel writers
all succeed in turn instead of making each other's plans stale; a writer in
another replica can still do that, and the group is then re-planned against the
fresh bank, up to ``serving.write_attempts`` times, before the client is told to
retry (503).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memgraft.collab.api import CollabMemory
from memgraft.collab.bank import (BankError, BankTimeout, BankUnavailable, EmbedderMismatch, MemoryBank,
                                  StaleDecision, open_bank)
from memgraft.collab.bank import pool as bank_pool
from memgraft.collab.bank.backend import hide_password
from memgraft.collab.maintain import cased, kinds
from memgraft.collab.types import Decision, MemoryGroup
from memgraft.config import Settings
from memgraft.graph.store import GraphStore
from memgraft.hgmem.methods import record_answer
from memgraft.models.embedder import Embedder
from memgraft.models.llm.base import LLM
from memgraft.models.reranker import Reranker
from serving import caps, schemas
from serving.budget import Budget, bounded, checked, checkpoint
from serving.memo import SharedMemoEmbedder
from serving.names import bank_path, banks_url, graph_path, trace_path
from serving.settings import ServingSettings


class NotFound(LookupError):
    """A graph, team bank or trace that does not exist: 404."""


class AlreadyApplied(RuntimeError):
    """The group is in the bank already; nothing was judged or written: 409."""


class TeamMismatch(ValueError):
    """A group whose ``team`` field names another team than the URL: 422."""


class BankUnusable(RuntimeError):
    """A team's bank file that is not a bank this code reads (corrupt, another schema): 409, for an operator."""


class Busy(RuntimeError):
    """A write that lost to other writers every time it tried, or a locked database: 503, retry after a second."""


@dataclass
class Models:
    """The protocol objects the library takes: proxies to deployments in the ingress, models in tests."""

    llm: LLM
    embedder: Embedder
    reranker: Reranker
    scorer: Any = None  # a ValidityScorer (or its proxy); None: hicomer.validity_scorer decides (state or none)
    scorer_source: str | None = None
    pair_encoder: Any = None  # the pair judge's second opinion on a model deployment; None: the policy loads its own


class Service:
    def __init__(self, settings: Settings, serving: ServingSettings, models: Models):
        self.settings, self.serving, self.models = settings, serving, models
        if models.scorer is None and settings.hicomer.validity_scorer == "state":  # the library's default S_val
            from memgraft.collab.retrieve.validity import StateValidity

            models.scorer = StateValidity(settings.hicomer.validity_state_logit)
            models.scorer_source = "the maintained state (hicomer.validity_scorer=state)"
        bank_pool.configure(settings.bank)  # a PostgreSQL bank's pool size and timeouts, for this process
        cased.warm()  # the updater's capitalisation prior, read before the first write rather than in it
        kinds.warm()  # and its word tagger (``maintain/kinds.py``)
        self._lock = threading.Lock()
        self._graphs: dict[str, tuple[int, GraphStore]] = {}
        self._teams: dict[str, CollabMemory] = {}
        self._writers: dict[str, threading.Lock] = {}
        self._opening: dict[str, threading.Lock] = {}  # one per team: its first open, outside self._lock

    # -- sources, as every response names them ---------------------------------------------
    @property
    def validity_source(self) -> str:
        if self.models.scorer is None:
            return "none: no validity scorer configured (serving.scorer_path), so S_final = S_sem"
        if getattr(self.models.scorer, "from_state", False):
            return f"validity from {self.models.scorer_source}"
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
        """The team's memory, opened on first use. The service-wide lock is never held across the open (it can
        wait up to a bank's lock timeout): concurrent openers of one team wait for one open, other teams go on."""
        with self._lock:
            memory = self._teams.get(team)
            if memory is not None:
                return memory
            opening = self._opening.setdefault(team, threading.Lock())
        with opening:
            with self._lock:
                memory = self._teams.get(team)
            if memory is None:
                memory = self._open_team(team, create)
                with self._lock:
                    self._teams[team] = memory
            return memory

    def _open_team(self, team: str, create: bool) -> CollabMemory:
        url = self._banks_url()
        location = url or bank_path(self.serving.banks_dir, team)
        if not create and url is None and not Path(location).exists():
            raise NotFound(f"team {team!r} has no memories yet (add a group first)")
        m = self.models
        memo = SharedMemoEmbedder(m.embedder)  # the write reuses the plan's vectors
        bank = _open_bank(team, location, memo, bound=True)
        bank.apply_group = checked(bank.apply_group)  # a write past its budget commits nothing
        if not create and url is not None and not bank.teams():
            bank.close()
            raise NotFound(f"team {team!r} has no memories yet (add a group first)")
        return CollabMemory(bank, self.settings, memo, llm=m.llm, reranker=m.reranker, scorer=m.scorer,
                            _policy=self._judge_policy(memo))

    def _judge_policy(self, embedder: Any) -> Any:
        """The pair judge asking the deployment's pair encoder (``Models.pair_encoder``) instead of loading one in
        this replica; None where the updater is another policy or has no second opinion (CollabMemory builds it)."""
        h = self.settings.hicomer
        if self.models.pair_encoder is None or h.updater_policy != "judge" or not h.judge_encoder:
            return None
        from memgraft.collab.maintain.policies import make_policy

        try:
            policy = make_policy(self.settings, kind="judge", embedder=embedder, second_opinion=False)
        except ValueError:  # a judge trained on another embedder: the write says so when it builds the policy
            return None
        policy.second = self.models.pair_encoder
        return policy

    def _banks_url(self) -> str | None:
        try:
            return banks_url(self.serving.banks_url)
        except LookupError as err:
            raise BankUnusable(str(err)) from None

    def writer(self, team: str) -> threading.Lock:
        """The lock one team's writes take in turn."""
        with self._lock:
            return self._writers.setdefault(team, threading.Lock())

    def semantic_source(self, memory: CollabMemory) -> str:
        return memory.semantic_source

    def add_group(self, team: str, group: MemoryGroup, budget: Budget | None = None) -> schemas.GroupResponse:
        """``budget``: the write's deadline and cancel flag (default: ``serving.write_timeout_s`` from now)."""
        if group.team != team:
            raise TeamMismatch(f"the group's team {group.team!r} does not match the URL's team {team!r}")
        caps.check_group(self.serving, group)
        memory = self.team(team, create=True)
        budget = budget or Budget(self.serving.write_timeout_s)
        budget.what = f"team {team!r}'s group"
        with self.writer(team), bounded(budget):
            budget.check()  # it may have waited its turn past the deadline, or its client left meanwhile
            report = self._apply(memory, group)
        if report.skipped:
            raise AlreadyApplied(f"team {team!r}: group {group.group_id!r} is already applied")
        return schemas.GroupResponse(
            team=team, group_id=group.group_id, policy=memory.policy.name, history=report.n_history,
            revisions=report.revisions, seconds=round(report.seconds, 4),
            decisions=[schemas.DecisionOut(**_decision(d)) for d in report.decisions])

    def _apply(self, memory: CollabMemory, group: MemoryGroup):
        attempts = self.serving.write_attempts
        for attempt in range(attempts):
            try:
                return memory.add_group(group)
            except StaleDecision:  # another replica wrote this team meanwhile: plan again on the fresh bank
                if attempt + 1 == attempts:
                    raise Busy(f"team {group.team!r}: group {group.group_id!r} was outpaced by other writers "
                               f"{attempts} times (serving.write_attempts); nothing was written, send it again")
            except sqlite3.OperationalError as err:
                if "locked" not in str(err):
                    raise
                if attempt + 1 == attempts:
                    raise Busy(f"team {group.team!r}: the bank is busy ({err}); nothing was written, "
                               f"send it again") from None
            time.sleep(min(0.05 * 2 ** attempt, 1.0))
            checkpoint()
        raise AssertionError("unreachable")

    def search(self, team: str, body: schemas.SearchRequest) -> schemas.SearchResponse:
        caps.check_k(self.serving, body.k)
        memory = self.team(team)
        hits = memory.search(team, body.query, k=body.k, as_of=body.as_of)
        return schemas.SearchResponse(
            team=team, query=body.query, as_of=body.as_of, semantic_source=self.semantic_source(memory),
            validity_source=self.validity_source,
            hits=[schemas.HitOut(memory=schemas.MemoryOut.of(h.memory), dense=h.dense, semantic=h.semantic,
                                 validity=h.validity, score=h.score) for h in hits])

    def answer(self, team: str, body: schemas.AnswerRequest) -> schemas.AnswerResponse:
        caps.check_k(self.serving, body.k)
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

    def history(self, team: str, memory_id: str) -> schemas.HistoryResponse:
        memory = self.team(team)
        current = memory.bank.memory(team, memory_id)
        if current is None:
            raise NotFound(f"team {team!r} has no memory {memory_id!r}")
        return schemas.HistoryResponse(
            team=team, memory=schemas.MemoryOut.of(current),
            decisions=[schemas.HistoryDecision(**_decision(d), group_id=d.group_id, decided_at=d.decided_at)
                       for d in memory.bank.decisions(team, memory_id)])

    def memories(self, team: str, as_of: datetime | None = None) -> schemas.MemoriesResponse:
        memory = self.team(team)
        return schemas.MemoriesResponse(team=team, as_of=as_of,
                                        memories=[schemas.MemoryOut.of(m) for m in memory.memories(team, as_of=as_of)])

    def manifest(self, graph: str) -> dict[str, Any]:
        """A graph's manifest.json (counts, models, index kinds, build settings) without loading the graph."""
        try:
            return json.loads((graph_path(self.serving.graphs_dir, graph) / "manifest.json").read_text())
        except FileNotFoundError:
            raise NotFound(f"no graph {graph!r} (graphs are folders under the service's graphs_dir)") from None

    def close(self) -> None:
        with self._lock:
            for memory in self._teams.values():
                memory.close()
            self._teams.clear()


def _decision(d: Decision) -> dict[str, Any]:
    return dict(decision_id=d.decision_id, memory_id=d.memory_id, level=d.level, relation=str(d.relation),
                action=str(d.action), before=d.before, after=d.after, valid_before=d.valid_before,
                valid_after=d.valid_after, decided_by=d.decided_by, reason=d.reason)


def _open_bank(team: str, location: str | Path, embedder: Any, *, bound: bool = False) -> MemoryBank:
    """The team's bank (``bound``: refusing other teams), or why it cannot be opened, in words that name the
    team and not the server's path or URL."""
    where = hide_password(str(location))
    try:
        return open_bank(location, embedder, team=team if bound else None)
    except EmbedderMismatch as err:
        raise EmbedderMismatch(str(err).replace(where, f"team {team!r}'s bank")) from None
    except (BankUnavailable, BankTimeout) as err:  # the server, not the bank: 503, retry
        raise type(err)(f"team {team!r}'s bank: {str(err).replace(where, 'its database')}") from None
    except BankError as err:
        raise BankUnusable(f"team {team!r}'s bank cannot be used: "
                           f"{str(err).replace(where, 'it').removeprefix('it: ')}") from None
    except sqlite3.DatabaseError as err:
        raise BankUnusable(f"team {team!r}'s bank cannot be read ({err}): an operator must restore or move "
                           f"it") from None
