"""The serving layer's parts without Ray: settings, names, tokens, body limits, and the API in process.

The API runs here on in-process models through FastAPI's TestClient (the same
app the ingress replica builds), so status codes and messages are checked in
seconds; ``test_serving.py`` checks the same app over real HTTP on Serve.
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memgraft.collab.bank import BankError
from memgraft.collab.retrieve.validity import FORMAT, ValidityScorer
from memgraft.models.llm.base import ChatRequest
from memgraft.models.reranker import CosineReranker
from serving import names
from serving.access import Access, Forbidden, TokensFile, Unauthorized
from serving.api import create_api, serve_state
from serving.limits import BodyLimit
from serving.proxies import EmbedderProxy, ScorerProxy
from serving.service import Models, Service
from serving.settings import from_env, load_profile, split_overrides
from tests.doubles import ScriptedLLM
from tests.doubles import HashEmbedder
from tests.collab_bank_helpers import chained_logs

TOKENS = {"teams": {"lab": "tok-lab-0001", "ops": "tok-ops-0001"}, "readers": ["tok-read-0001"]}
LAB = {"Authorization": "Bearer tok-lab-0001"}


# -- settings -------------------------------------------------------------------------------------


def test_profile_serving_section_and_overrides(tmp_path, monkeypatch):
    profile = tmp_path / "p.yaml"
    profile.write_text("profile: p\nhgmem: {max_step: 2}\nserving:\n  port: 9100\n  banks_dir: banks\n"
                       "  deployments: {embedder: {replicas: 3}}\n")
    monkeypatch.chdir(tmp_path)
    settings, serving = load_profile(profile, ["serving.deployments.llm.num_gpus=1", "hgmem.top_chunks=4"])
    assert settings.profile == "p" and settings.hgmem.max_step == 2 and settings.hgmem.top_chunks == 4
    assert serving.port == 9100 and serving.banks_dir == str(tmp_path / "banks")
    # one field set, the deployment's other defaults kept
    assert serving.deployments.embedder.replicas == 3 and serving.deployments.embedder.max_ongoing_requests == 128
    assert serving.deployments.llm.num_gpus == 1 and serving.deployments.llm.num_cpus == 0.5
    assert serving.deployments.llm.ray_options()["ray_actor_options"] == {"num_cpus": 0.5, "num_gpus": 1}
    with pytest.raises(ValueError):
        load_profile(profile, ["serving.prot=1"])

    env = {"MEMGRAFT_PROFILE": str(profile), "MEMGRAFT_SET": "serving.port=9200; hgmem.max_step=1;",
           "MEMGRAFT_TOKENS": "t.yaml"}
    settings, serving = from_env(env)
    assert serving.port == 9200 and settings.hgmem.max_step == 1 and serving.tokens_file == str(tmp_path / "t.yaml")
    assert split_overrides(" a.b=1 ;; c.d=x ") == ["a.b=1", "c.d=x"]


def test_local_and_cluster_profiles_load():
    for profile in ("local", "a100"):
        settings, serving = load_profile(profile)
        assert settings.profile == profile and serving.scorer_path is None


# -- names and tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["..", "a/b", "/etc", ".hidden", "-x", "a.sqlite", "", "x" * 65, "a b", "ü"])
def test_names_that_could_leave_their_folder_are_refused(name, tmp_path):
    with pytest.raises(names.BadName):
        names.bank_path(tmp_path, name)
    with pytest.raises(names.BadName):
        names.graph_path(tmp_path, name)


def test_names_map_directly_under_their_folder(tmp_path):
    assert names.bank_path(tmp_path, "lab-0") == tmp_path / "lab-0.sqlite"
    assert names.graph_path(tmp_path, "demo_graph") == tmp_path / "demo_graph"
    assert names.trace_path(tmp_path, "abc123.hgmem-no-merge") == tmp_path / "abc123.hgmem-no-merge.json"
    with pytest.raises(names.BadName):
        names.trace_path(tmp_path, "../x.hgmem")


def test_tokens_reach_their_own_team_and_reload_when_the_file_changes(tmp_path):
    path = tmp_path / "tokens.yaml"
    path.write_text(json.dumps(TOKENS))  # JSON is YAML
    access = Access(str(path))
    access.require_team("tok-lab-0001", "lab")
    access.require_reader("tok-read-0001")
    with pytest.raises(Forbidden):
        access.require_team("tok-ops-0001", "lab")
    with pytest.raises(Forbidden):
        access.require_reader("tok-lab-0001")
    with pytest.raises(Unauthorized):
        access.require_team("tok-lab-0002", "lab")
    with pytest.raises(Unauthorized):
        access.require_team(None, "lab")

    path.write_text(json.dumps({"teams": {"lab": "tok-lab-rotated"}, "readers": []}))
    os.utime(path, ns=(time.time_ns() + 10**9,) * 2)
    with pytest.raises(Unauthorized):
        access.require_team("tok-lab-0001", "lab")
    access.require_team("tok-lab-rotated", "lab")

    path.write_text("teams: [not, a, map]")
    os.utime(path, ns=(time.time_ns() + 2 * 10**9,) * 2)
    with pytest.raises(Unauthorized, match="tokens file is invalid"):
        access.require_team("tok-lab-rotated", "lab")

    with pytest.raises(Unauthorized, match="no tokens are configured"):
        Access(None).require_reader("tok-read-0001")
    with pytest.raises(ValueError, match="one team or reader"):
        TokensFile(teams={"a": "same-token"}, readers=["same-token"])
    with pytest.raises(ValueError, match="8 characters"):
        TokensFile(readers=["short"])


# -- body limit -----------------------------------------------------------------------------------


def test_body_limit_refuses_declared_and_streamed_bodies_and_replays_the_rest():
    app = FastAPI()

    @app.post("/echo")
    async def echo(body: dict) -> dict:
        return body

    client = TestClient(BodyLimit(app, max_body_bytes=100))
    assert client.post("/echo", json={"a": "x" * 20}).json() == {"a": "x" * 20}
    assert client.post("/echo", json={"a": "x" * 200}).status_code == 413
    streamed = client.post("/echo", content=iter([b'{"a": "', b"y" * 120, b'"}']),
                           headers={"content-type": "application/json"})
    assert streamed.status_code == 413


# -- the API in process ---------------------------------------------------------------------------


def _script(request: ChatRequest) -> str:
    if (request.json_schema or {}).get("title") == "CollabAnswer":
        return json.dumps({"answer": "Tuesdays."})
    return "plain reply"


def _group(gid, day, *texts, team="lab"):
    return {"team": team, "group_id": gid, "time": f"2025-01-{day:02d}T09:00:00",
            "memories": [{"memory_id": f"{gid}-m{i}", "type": "team" if i == 0 else "individual", "author": "a",
                          "content": t} for i, t in enumerate(texts)]}


@pytest.fixture()
def api(tmp_path, settings):
    (tmp_path / "tokens.json").write_text(json.dumps(TOKENS))
    # a hash embedder: the bundled pair judge reads MiniLM vectors, so both judges are the rules here
    s = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules",
                                                                                   "conflict_judge": "rules"})})
    _, serving = load_profile("local", [f"serving.banks_dir={tmp_path / 'banks'}", "serving.max_body_bytes=2048",
                                        f"serving.graphs_dir={tmp_path / 'graphs'}"])
    embedder = HashEmbedder()
    scorer = ValidityScorer(embedder.dim, hidden=8)
    torch.save({"format": FORMAT, "config": {"dim": embedder.dim, "hidden": 8, "type_dim": 8, "dropout": 0.1},
                "state_dict": scorer.state_dict()}, tmp_path / "scorer.pt")
    models = Models(llm=ScriptedLLM(_script), embedder=embedder, reranker=CosineReranker(embedder), scorer=scorer,
                    scorer_source="scorer.pt")
    service = Service(s, serving, models)
    yield TestClient(serve_state(create_api(), service, Access(str(tmp_path / "tokens.json"))))
    service.close()


def test_api_in_process_maps_library_errors_to_4xx(api):
    assert api.post("/v1/teams/lab/groups", json=_group("g2", 7, "Deploys happen on Tuesdays."),
                    headers=LAB).status_code == 200
    late = api.post("/v1/teams/lab/groups", json=_group("g1", 6, "Deploys happen on Mondays."), headers=LAB)
    assert late.status_code == 409 and "comes" in late.json()["detail"] and late.json()["error"] == "OutOfOrderGroup"
    dup = api.post("/v1/teams/lab/groups", json=_group("g3", 8, "Same id twice.") | {
        "memories": [{"memory_id": "x", "type": "team", "author": "a", "content": "c"}] * 2}, headers=LAB)
    assert dup.status_code == 422 and "repeats a memory_id" in dup.json()["message"]
    clash = api.post("/v1/teams/lab/groups", json=_group("g4", 9, "Reuses g2's memory id.") | {
        "memories": [{"memory_id": "g2-m0", "type": "team", "author": "a", "content": "c"}]}, headers=LAB)
    assert clash.status_code == 400 and "already holds" in clash.json()["detail"]

    found = api.post("/v1/teams/lab/search", json={"query": "when do deploys happen"}, headers=LAB).json()
    assert found["validity_source"] == "validity scorer scorer.pt"
    assert all(isinstance(h["validity"], float) and h["score"] <= h["semantic"] for h in found["hits"])
    answer = api.post("/v1/teams/lab/answer", json={"question": "When do deploys happen?"}, headers=LAB).json()
    assert answer["answer"] == "Tuesdays."

    assert api.post("/v1/teams/lab/search", json={"query": "x" * 3000}, headers=LAB).status_code == 413
    assert api.post("/v1/graphs/none/query", json={"question": "q"},
                    headers={"Authorization": "Bearer tok-read-0001"}).status_code == 404
    chat = api.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}],
                                                  "response_format": {"type": "json_schema"}}, headers=LAB)
    assert chat.status_code == 422 and "schema" in chat.json()["detail"]


# -- proxies and the cluster LLM's request body --------------------------------------------------


class _Handle:
    """A deployment handle stand-in: ``handle.method.remote(*args).result()`` calls ``target.method``."""

    def __init__(self, target):
        self.target = target

    def __getattr__(self, method):
        fn = getattr(self.target, method)
        return SimpleNamespace(remote=lambda *a: SimpleNamespace(result=lambda timeout_s=None: fn(*a)))


def test_scorer_proxy_and_deployment_batch_agree_with_the_scorer():
    from serving.scorer import ScorerDeployment

    scorer = ValidityScorer(16, hidden=8)
    deployment = ScorerDeployment.func_or_class.__new__(ScorerDeployment.func_or_class)
    deployment.scorer = scorer
    target = SimpleNamespace(score=lambda *arrays: deployment._forward([tuple(arrays)])[0])
    proxy = ScorerProxy(_Handle(target), 16, "s.pt")
    g = torch.Generator().manual_seed(0)
    h_q, h_m = torch.randn(5, 16, generator=g), torch.randn(5, 16, generator=g)
    is_team, norm = torch.tensor([0, 1, 0, 1, 1]), torch.rand(5, generator=g)
    assert torch.allclose(proxy.eval().score(h_q, h_m, is_team, norm), scorer.score(h_q, h_m, is_team, norm))
    # two callers' candidates in one forward, split back per caller
    parts = deployment._forward([(h_q[:2].numpy(), h_m[:2].numpy(), is_team[:2].numpy(), norm[:2].numpy()),
                                 (h_q[2:].numpy(), h_m[2:].numpy(), is_team[2:].numpy(), norm[2:].numpy())])
    assert [len(p) for p in parts] == [2, 3]
    assert np.allclose(np.concatenate(parts), scorer.score(h_q, h_m, is_team, norm).numpy(), atol=1e-6)

    embedder = HashEmbedder()
    proxy = EmbedderProxy(_Handle(embedder), embedder.name, embedder.dim)
    assert proxy.encode([]).shape == (0, 64) and np.allclose(proxy.encode(["a b"]), embedder.encode(["a b"]))


def test_cluster_llm_request_body(settings):
    from serving.vllm import chat_body

    schema = {"title": "Answer (v2)", "type": "object", "properties": {"answer": {"type": "string"}}}
    body = chat_body(ChatRequest([{"role": "user", "content": "q"}], json_schema=schema, max_new_tokens=64),
                     "Qwen/Qwen2.5-32B-Instruct", settings)
    assert body["max_tokens"] == 64 and body["temperature"] == settings.generation.temperature
    assert body["response_format"]["json_schema"] == {"name": "Answer__v2_", "schema": schema, "strict": True}
    assert body["top_k"] == settings.generation.top_k and body["seed"] == settings.generation.seed


def test_two_replicas_write_the_same_team_on_one_postgres_bank(settings, pg_url, monkeypatch):
    """Two ingress replicas (two Services, as Serve runs them) on one PostgreSQL bank, ``banks_url`` read from
    the environment: both write one team at once, every group lands, no decision is lost, and each team's
    connection sees its own team only."""
    import threading

    from memgraft.collab.types import MemoryGroup

    monkeypatch.setenv("MEMGRAFT_TEST_BANK_URL", pg_url())
    s = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules",
                                                                                   "conflict_judge": "rules"})})
    _, serving = load_profile("local", ["serving.banks_url=$MEMGRAFT_TEST_BANK_URL",
                                        "serving.deployments.ingress.replicas=2"])
    embedder = HashEmbedder()
    replicas = [Service(s, serving, Models(llm=ScriptedLLM(_script), embedder=embedder,
                                           reranker=CosineReranker(embedder))) for _ in range(2)]
    first = MemoryGroup.model_validate(_group("g0", 1, "The deploy window is Monday 9am."))
    replicas[0].add_group("lab", first)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for j in range(4):  # one time for all: the order between replicas is not a refusal
                texts = [f"The deploy window moves to slot {i}{j}.", f"Replica {i} note {j} on deploys."]
                replicas[i].add_group("lab", MemoryGroup.model_validate(_group(f"r{i}-{j}", 2, *texts)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        bank = replicas[1].team("lab").bank
        assert bank.stats("lab")["groups"] == 9 and bank.backend == "postgresql"
        assert chained_logs(bank, "lab") > 0
        with pytest.raises(Exception, match="no memories yet"):
            replicas[0].team("ops")
        replicas[0].add_group("ops", MemoryGroup.model_validate(_group("o1", 1, "Ops has its own notes.", team="ops")))
        assert [m.team for m in replicas[0].team("ops").bank.memories("ops")] == ["ops"]
        with pytest.raises(BankError, match="team 'ops' only"):
            replicas[0].team("ops").bank.memories("lab")
    finally:
        for r in replicas:
            r.close()
