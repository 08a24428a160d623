"""The service on its real local LLM deployment (the bundled SmolLM2, no ``llm_factory``): one chat
completion and one team answer, with small token limits, over HTTP on a local Ray."""

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
        f"serving.graphs_dir={state / 'graphs'}", "hicomer.updater_policy=rules", "generation.max_new_tokens=96"],
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
