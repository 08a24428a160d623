"""Bounded work and the documented error contract, in process (issue 32).

The API runs on FastAPI's TestClient over in-process doubles: a group dated far ahead,
errors that must not echo what the client sent, bodies that cannot be parsed, the page's
security headers, a prompt over the model's context, and a slow LLM held for one team
while another's short call answers.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from memgraft.models.reranker import CosineReranker
from serving.access import Access
from serving.api import create_api, serve_state
from serving.service import Models, Service
from serving.settings import load_profile
from tests.doubles import HashEmbedder, ScriptedLLM

TOKENS = {"teams": {"lab": "tok-lab-0001", "ops": "tok-ops-0001"}, "readers": ["tok-read-0001"]}
LAB, OPS = {"Authorization": "Bearer tok-lab-0001"}, {"Authorization": "Bearer tok-ops-0001"}


def _group(gid: str, when: datetime | str, *texts: str, team: str = "lab") -> dict:
    texts = texts or ("The primary assay is qPCR from now on.", "I ran batch 3 with ELISA as the primary assay.")
    return {"team": team, "group_id": gid, "time": when if isinstance(when, str) else when.isoformat(),
            "memories": [{"memory_id": f"{gid}-m{i}", "type": "team" if i == 0 else "individual", "author": "a",
                          "content": t} for i, t in enumerate(texts)]}


def _service(tmp_path, settings, llm=None, overrides=()) -> Service:
    (tmp_path / "tokens.json").write_text(json.dumps(TOKENS))
    s = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules"})})
    _, serving = load_profile("local", [f"serving.banks_dir={tmp_path / 'banks'}", *overrides])
    embedder = HashEmbedder()
    llm = llm or ScriptedLLM(lambda r: json.dumps({"answer": "qPCR."}) if r.json_schema else "plain reply")
    service = Service(s, serving, Models(llm=llm, embedder=embedder, reranker=CosineReranker(embedder)))
    service.access = Access(str(tmp_path / "tokens.json"))
    return service


@pytest.fixture()
def service(tmp_path, settings):
    service = _service(tmp_path, settings)
    yield service
    service.close()


@pytest.fixture()
def api(service):
    return TestClient(serve_state(create_api(), service, service.access))


# -- a group dated far ahead ------------------------------------------------------------------


def test_a_group_dated_past_max_future_s_is_422_and_the_team_can_still_write(api):
    now = datetime.now(timezone.utc)
    for when in ["9999-12-30T00:00:00", now + timedelta(days=2)]:
        r = api.post("/v1/teams/lab/groups", json=_group("far", when), headers=LAB)
        assert r.status_code == 422 and "serving.max_future_s" in r.json()["detail"], r.text
        assert r.json()["error"] == "OverLimit" and "9999" not in r.text
    assert api.post("/v1/teams/lab/groups", json=_group("soon", now + timedelta(hours=1)), headers=LAB).status_code == 200
    assert api.post("/v1/teams/lab/groups", json=_group("later", now + timedelta(hours=2)), headers=LAB).status_code == 200
