"""The service as a user gets it: its real local LLM deployment (the bundled SmolLM2, no ``llm_factory``) and the
default updater (the bundled pair judge with its second opinion): one chat completion, one team answer with small
token limits, and a team decision changed twice, over HTTP on a local Ray."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.serving_helpers import free_port

pytestmark = pytest.mark.slow

TOKEN = "tok-real-lab-0001"


@pytest.fixture(scope="module")
def served(ray_local, tmp_path_factory):
    from ray import serve

    from serving.application import compose
    from serving.settings import load_profile

    state = tmp_path_factory.mktemp("serve-real")
    (state / "tokens.json").write_text(json.dumps({"teams": {"lab": TOKEN}}))
    settings, serving = load_profile("local", [
        f"serving.banks_dir={state / 'banks'}", f"serving.traces_dir={state / 'traces'}",
        f"serving.graphs_dir={state / 'graphs'}", "generation.max_new_tokens=96"],
        tokens_file=str(state / "tokens.json"))
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(compose(settings, serving), name="memgraft-real", route_prefix="/")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            yield client
    finally:
        serve.shutdown()


def test_chat_completions_on_smollm2(served):
    health = served.get("/healthz").json()
    assert "SmolLM2" in health["llm"], health
    r = served.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Say hello."}],
                                                  "max_tokens": 16, "temperature": 0})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["choices"][0]["message"]["content"].strip() and 0 < out["usage"]["completion_tokens"] <= 16


def test_a_team_answer_on_smollm2(served):
    group = {"team": "lab", "group_id": "g1", "time": "2025-01-06T09:00:00", "memories": [
        {"memory_id": "m1", "type": "team", "author": "lead", "content": "The primary assay is qPCR from now on."},
        {"memory_id": "m2", "type": "individual", "author": "ann", "content": "Samples are stored in freezer B."}]}
    assert served.post("/v1/teams/lab/groups", json=group).status_code == 200
    r = served.post("/v1/teams/lab/answer", json={"question": "Which assay do we use?", "k": 5, "evidence": 2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"].strip() and body["evidence"] and body["usage"]["calls"] == 1
    assert body["usage"]["completion_tokens"] > 0


def test_a_decision_changed_twice_through_the_service_with_the_default_updater(served):
    """The deploy case from issue 30: the judge once read "now ... instead of Tuesdays" as compatible."""
    assert served.get("/healthz").status_code == 200
    said = [("d1", "2025-02-03T09:00:00", "Deploys happen on Tuesdays."),
            ("d2", "2025-03-03T09:00:00", "Deploys now happen on Thursdays instead of Tuesdays."),
            ("d3", "2025-04-07T09:00:00", "From now on deploys happen on Fridays, instead of Thursdays.")]
    for memory_id, time, content in said:
        group = {"team": "lab", "group_id": f"g-{memory_id}", "time": time, "memories": [
            {"memory_id": memory_id, "type": "team", "author": "lead", "content": content}]}
        r = served.post("/v1/teams/lab/groups", json=group)
        assert r.status_code == 200, r.text
    memories = {m["memory_id"]: m for m in served.get("/v1/teams/lab/memories").json()["memories"]}
    assert [memories[i]["valid"] for i in ("d1", "d2", "d3")] == [False, False, True], memories
    assert "superseded by d2" in memories["d1"]["maintained"] and "superseded by d3" in memories["d2"]["maintained"]
    hits = served.post("/v1/teams/lab/search", json={"query": "Which day do deploys happen?", "k": 3}).json()["hits"]
    assert hits[0]["memory"]["memory_id"] == "d3", hits
