"""The stdio server's side: one local bank and the embedded default models, owned by the local user.

A desktop client starts ``python -m serving.mcp --bank B`` itself, as the user who
owns B, so there are no tokens: whoever can start the process can read the file
anyway. The bank is one file holding any number of teams (what ``python -m
memgraft.collab`` writes), or a ``postgresql://`` URL, where the HTTP service keeps
one file per team; apart from that the same :class:`~serving.service.Service`
answers, with the library's models in process (no Ray). The embedder loads at start; the LLM on the first
question, so listing tools or searching never waits for it.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Sequence

from memgraft.collab.api import CollabMemory
from memgraft.collab.bank.backend import is_postgres
from memgraft.config import Settings
from memgraft.models.llm.base import ChatRequest, Completion
from serving.memo import SharedMemoEmbedder
from serving.names import check
from serving.service import Models, NotFound, Service, _open_bank
from serving.settings import ServingSettings, load_profile


class LazyLLM:
    """The profile's LLM, loaded on first use (a question), not when the client connects."""

    def __init__(self, settings: Settings):
        self.settings, self._llm, self._lock = settings, None, threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._llm is None:
                from memgraft.models.llm.factory import load_llm

                self._llm = load_llm(self.settings)
            return self._llm

    @property
    def name(self) -> str:
        return self._loaded().name

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return self._loaded().generate(requests)


class BankService(Service):
    """The service over one bank (a file or a database URL) for all its teams, not ``<banks_dir>/<team>.sqlite``."""

    def __init__(self, bank: str | Path, settings: Settings, serving: ServingSettings, models: Models):
        super().__init__(settings, serving, models)
        self.bank_file = bank if is_postgres(bank) else Path(bank)  # or a postgresql:// URL
        self._memory: CollabMemory | None = None

    def team(self, team: str, *, create: bool = False) -> CollabMemory:
        check("team", team)
        with self._lock:
            if self._memory is None:
                if not create and isinstance(self.bank_file, Path) and not self.bank_file.exists():
                    raise NotFound(f"team {team!r} has no memories yet (add a group first)")
                m = self.models
                memo = SharedMemoEmbedder(m.embedder)
                self._memory = CollabMemory(_open_bank(team, self.bank_file, memo), self.settings, memo, llm=m.llm,
                                            reranker=m.reranker, scorer=m.scorer)
            memory = self._memory
        if not create and team not in memory.bank.teams():
            raise NotFound(f"team {team!r} has no memories in this bank (its teams: {', '.join(memory.bank.teams())})")
        return memory

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None


class Owner:
    """The stdio gate: every team and graph is the local user's; writes to a team still take turns."""

    def __init__(self, service: BankService):
        self._service = service
        self._turns: dict[str, asyncio.Lock] = {}

    @property
    def service(self) -> BankService:
        return self._service

    def team(self, ctx: Any, team: str) -> None:
        return None

    def reader(self, ctx: Any) -> None:
        return None

    def write_turn(self, team: str) -> asyncio.Lock:
        return self._turns.setdefault(team, asyncio.Lock())


def local_gate(bank: str, *, graphs: str | None = None, traces: str | None = None, profile: str = "local",
               overrides: Sequence[str] = ()) -> Owner:
    from memgraft.collab.retrieve.validity import make_validity
    from memgraft.models.embedder import load_embedder
    from memgraft.models.reranker import load_reranker

    bank_file = bank if is_postgres(bank) else Path(bank).expanduser().resolve()
    beside = Path.cwd() if isinstance(bank_file, str) else bank_file.parent  # a database: here
    places = [f"serving.graphs_dir={Path(graphs).expanduser().resolve() if graphs else beside / 'graphs'}",
              f"serving.traces_dir={Path(traces).expanduser().resolve() if traces else beside / 'traces'}"]
    settings, serving = load_profile(profile, [*places, *overrides])
    embedder = load_embedder(settings)
    h = settings.hicomer
    scorer = make_validity(h.validity_scorer, h.validity_state_logit)
    models = Models(llm=LazyLLM(settings), embedder=embedder, reranker=load_reranker(settings, embedder),
                    scorer=scorer, scorer_source=f"hicomer.validity_scorer={h.validity_scorer}")
    return Owner(BankService(bank_file, settings, serving, models))
