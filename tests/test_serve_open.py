"""Opening a team's bank holds up only that team (issue 32).

A bank open can wait on a lock (a SQLite or PostgreSQL bank busy with another writer, up to its
timeout). The service opens each team on first use; here one team's open is held on an event
and another team is written and searched meanwhile, and two openers of the held team get the
one memory that a single open made.
"""

from __future__ import annotations

import threading

import pytest

import serving.service as service_module
from memgraft.models.reranker import CosineReranker
from serving import schemas
from serving.service import Models, Service
from serving.settings import load_profile
from tests.doubles import HashEmbedder, ScriptedLLM

WHEN = "2025-02-03T09:00:00"


def _group(team: str, gid: str) -> schemas.GroupRequest:
    return schemas.GroupRequest.model_validate({
        "team": team, "group_id": gid, "time": WHEN,
        "memories": [{"memory_id": f"{gid}-m0", "type": "team", "author": "a",
                      "content": f"Team {team} keeps the samples in freezer B."}]})


@pytest.fixture()
def service(tmp_path, settings):
    s = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules"})})
    _, serving = load_profile("local", [f"serving.banks_dir={tmp_path / 'banks'}"])
    embedder = HashEmbedder()
    service = Service(s, serving, Models(llm=ScriptedLLM(["unused"]), embedder=embedder,
                                         reranker=CosineReranker(embedder)))
    yield service
    service.close()


def test_a_team_whose_bank_open_waits_does_not_hold_up_another_team(service, monkeypatch):
    real_open = service_module._open_bank
    entered, release = threading.Event(), threading.Event()
    opens: list[str] = []
    order: list[str] = []

    def open_bank(team, location, embedder, **kw):
        opens.append(team)
        if team == "held":
            entered.set()
            release.wait(timeout=120)  # the bank's lock, held by another writer
        return real_open(team, location, embedder, **kw)

    monkeypatch.setattr(service_module, "_open_bank", open_bank)
    got: list = []

    def held() -> None:
        got.append(service.team("held", create=True))
        order.append("held opened")

    openers = [threading.Thread(target=held) for _ in range(2)]
    for t in openers:
        t.start()
    assert entered.wait(timeout=60)

    def other() -> None:
        service.add_group("free", _group("free", "free-g1"))
        hits = service.search("free", schemas.SearchRequest(query="where are the samples?", k=3)).hits
        assert [h.memory.memory_id for h in hits] == ["free-g1-m0"]
        order.append("other team answered")

    b = threading.Thread(target=other)
    b.start()
    b.join(timeout=60)  # on a service that holds its lock across the open, this waits for the release below
    release.set()
    b.join(timeout=60)
    for t in openers:
        t.join(timeout=60)
    assert order == ["other team answered", "held opened", "held opened"], order
    assert opens.count("held") == 1 and got[0] is got[1]  # the second opener waited for the first's open


def test_a_failed_open_is_not_kept_and_the_next_request_opens_again(service, monkeypatch):
    real_open = service_module._open_bank
    calls: list[str] = []

    def open_bank(team, location, embedder, **kw):
        calls.append(team)
        if len(calls) == 1:
            raise service_module.BankUnusable("held by an operator")
        return real_open(team, location, embedder, **kw)

    monkeypatch.setattr(service_module, "_open_bank", open_bank)
    with pytest.raises(service_module.BankUnusable):
        service.team("lab", create=True)
    assert service.team("lab", create=True) is service.team("lab")
    assert calls == ["lab", "lab"]
