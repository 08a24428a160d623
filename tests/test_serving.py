"""The Serve application over HTTP on a local Ray: every endpoint, tokens, bad bodies, a replica killed.

One application for the module (Serve's start-up is the slow part): the real
embedder and cosine reranker deployments, a scripted LLM in the LLM deployment
(SmolLM2 on 2 cores would take minutes per HGMem question), the session's
MuSiQue slice graph, and team banks written through the rules updater, on the session's PostgreSQL server with
two ingress replicas (file banks behind Serve are tests/test_serve_load.py's and tests/test_serve_real.py's).
"""

from __future__ import annotations

import json
import sys
import threading
import time

import cloudpickle
import httpx
import pytest

import tests.doubles
import tests.serving_helpers
from tests.serving_helpers import SLOW_GATE, free_port, scripted_llm
from tests.waiting import gate, wait_until

pytestmark = pytest.mark.slow

APP = "memgraft-test"
TOKENS = {"teams": {"lab": "tok-lab-0001", "ops": "tok-ops-0001", "rel": "tok-rel-0001"},
          "readers": ["tok-read-0001"]}
LAB, OPS, REL, READ = ({"Authorization": f"Bearer {t}"}
                       for t in ("tok-lab-0001", "tok-ops-0001", "tok-rel-0001", "tok-read-0001"))
QUESTION = "Who published the Journal of Psychotherapy Integration?"


def group(team, gid, day, *memories):
    return {"team": team, "group_id": gid, "time": f"2025-01-{day:02d}T09:00:00",
            "memories": [{"memory_id": f"{gid}-m{i}", "type": kind, "author": "ann", "content": text}
                         for i, (kind, text) in enumerate(memories)]}


G1 = group("lab", "g1", 6, ("team", "The primary assay is qPCR from now on."),
           ("individual", "I ran batch 3 with ELISA as the primary assay."))
G2 = group("lab", "g2", 7, ("team", "Samples are stored at -80 C in freezer B."),
           ("individual", "Ran ELISA on batch 3; signal looked clean."))


@pytest.fixture(scope="module")
def served(ray_local, slice_graph, pg_server, tmp_path_factory):
    """(base URL, state folder, banks URL) of the application, shut down after the module."""
    from ray import serve

    from serving.application import compose
    from serving.settings import load_profile

    state, banks = tmp_path_factory.mktemp("serving"), pg_server.database()
    (state / "graphs").mkdir()
    (state / "graphs" / "slice").symlink_to(slice_graph[0], target_is_directory=True)
    (state / "tokens.json").write_text(json.dumps(TOKENS))
    settings, serving = load_profile("local", [
        f"serving.graphs_dir={state / 'graphs'}", f"serving.banks_url={banks}", "serving.deployments.ingress.replicas=2",
        f"serving.traces_dir={state / 'traces'}", "serving.max_body_bytes=65536"],
        tokens_file=str(state / "tokens.json"))
    for module in (tests.doubles, tests.serving_helpers, sys.modules[__name__]):
        cloudpickle.register_pickle_by_value(module)
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(compose(settings, serving, llm_factory=scripted_llm), name=APP, route_prefix="/")
        yield f"http://127.0.0.1:{port}", state, banks
    finally:
        serve.shutdown()


@pytest.fixture(scope="module")
def client(served):
    with httpx.Client(base_url=served[0], timeout=120) as c:
        yield c


@pytest.fixture(scope="module")
def lab_bank(client):
    """Team lab's bank with two groups (the first revises a conflicting individual memory)."""
    first = client.post("/v1/teams/lab/groups", json=G1, headers=LAB)
    second = client.post("/v1/teams/lab/groups", json=G2, headers=LAB)
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    return first.json(), second.json()


def test_openapi_lists_every_endpoint(client):
    spec = client.get("/openapi.json").json()
    assert {"/healthz", "/v1/graphs/{graph}/query", "/v1/traces/{trace_id}", "/v1/teams/{team}/groups",
            "/v1/teams/{team}/search", "/v1/teams/{team}/answer", "/v1/chat/completions"} <= set(spec["paths"])
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["embedder"] == "all-MiniLM-L6-v2" and health["llm"] == "scripted"
    assert "no cross-encoder" in health["reranker"] and health["validity"].startswith("validity from the maintained state")


def test_mcp_and_the_web_page_are_served_by_the_serve_ingress(served, client, lab_bank):
    """Through Ray Serve itself, not only the app in a test server: /mcp with the SDK's client and the tokens,
    /ui's page."""
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run(headers):
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
                Client(streamable_http_client(f"{served[0]}/mcp", http_client=http)) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            found = await mcp.call_tool("search_memories", {"team": "lab", "query": "where are samples stored"})
            return tools, found

    tools, found = asyncio.run(run(LAB))
    assert {"search_memories", "add_memory_group", "query_graph"} <= tools
    assert not found.is_error and "freezer B" in "".join(getattr(c, "text", "") for c in found.content)
    _, other = asyncio.run(run(OPS))  # ops's token, lab's memories
    assert other.is_error and "403" in "".join(getattr(c, "text", "") for c in other.content)
    page = client.get("/ui/")
    assert page.status_code == 200 and "<html" in page.text.lower()


def test_graph_query_returns_answer_memory_and_trace(client):
    r = client.post("/v1/graphs/slice/query", json={"question": QUESTION}, headers=READ)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] == "scripted answer" and body["method"] == "hgmem" and body["steps"] == 4  # t = 0..3
    assert body["final_memory"]["points"] and body["llm_calls"] == 11
    trace = client.get(f"/v1/traces/{body['trace_id']}", headers=READ)
    assert trace.status_code == 200 and trace.json()["question"] == QUESTION
    page = client.get(f"/v1/traces/{body['trace_id']}", params={"format": "html"}, headers=READ)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text.startswith("<!DOCTYPE html>") and "<svg" in page.text

    naive = client.post("/v1/graphs/slice/query", json={"question": QUESTION, "method": "naive"}, headers=READ)
    assert naive.status_code == 200 and naive.json()["final_memory"] is None
    no_page = client.get(f"/v1/traces/{naive.json()['trace_id']}", params={"format": "html"}, headers=READ)
    assert no_page.status_code == 404 and "no HTML page" in no_page.json()["detail"]

    assert client.post("/v1/graphs/nope/query", json={"question": "q"}, headers=READ).status_code == 404
    assert client.get("/v1/traces/0123abcd.hgmem", headers=READ).status_code == 404
    bad = client.post("/v1/graphs/slice/query", json={"question": "q", "method": "magic"}, headers=READ)
    assert bad.status_code == 422 and "method" in bad.json()["message"]


def test_team_groups_search_and_answer(client, lab_bank):
    first, second = lab_bank
    assert first["policy"] == "judge" and first["revisions"] == 1  # the product default
    revised = next(d for d in first["decisions"] if d["action"] == "revise")
    assert revised["memory_id"] == "g1-m1" and revised["relation"] == "contradiction" and not revised["valid_after"]
    again = client.post("/v1/teams/lab/groups", json=G1, headers=LAB)
    assert again.status_code == 409 and "already applied" in again.json()["detail"]

    # all four memories: the outdated one sinks below the three valid ones, so a k of 3 would leave it out
    r = client.post("/v1/teams/lab/search", json={"query": "Which assay is the primary assay?", "k": 4}, headers=LAB)
    assert r.status_code == 200, r.text
    found = r.json()
    assert "no cross-encoder" in found["semantic_source"] and "maintained state" in found["validity_source"]
    hits = found["hits"]
    assert len(hits) == 4 and hits[0]["memory"]["memory_id"] == "g1-m0"  # the current protocol first
    for h in hits:
        assert set(h["memory"]) >= {"type", "time", "original", "maintained", "valid"}
        # S_val is the maintained flag: a valid memory keeps its S_sem, an outdated one sinks below
        assert h["validity"] == (12.0 if h["memory"]["valid"] else -12.0)
        assert h["score"] == pytest.approx(h["semantic"], abs=1e-3) if h["memory"]["valid"] else h["score"] < -5
    stale = next(h["memory"] for h in hits if h["memory"]["memory_id"] == "g1-m1")
    assert not stale["valid"] and stale["maintained"] != stale["original"]
    assert hits[-1]["memory"]["memory_id"] == "g1-m1"  # below every valid hit

    before = client.post("/v1/teams/lab/search", json={"query": "freezer", "as_of": "2025-01-06T12:00:00"},
                         headers=LAB).json()
    assert {h["memory"]["group_id"] for h in before["hits"]} == {"g1"}  # g2 came a day later

    a = client.post("/v1/teams/lab/answer", json={"question": "Which assay do we use?"}, headers=LAB)
    assert a.status_code == 200, a.text
    answer = a.json()
    assert answer["answer"] == "We use qPCR." and answer["evidence"]
    assert isinstance(answer["dropped"], list) and answer["usage"]["calls"] == 1

    missing = client.post("/v1/teams/ops/search", json={"query": "assay"}, headers=OPS)
    assert missing.status_code == 404 and "no memories" in missing.json()["detail"]


def test_a_token_reaches_only_its_own_team(client, lab_bank):
    ops_group = group("ops", "o1", 6, ("team", "Deploys happen on Tuesdays."))
    for path, body in [("groups", ops_group), ("search", {"query": "assay"}), ("answer", {"question": "assay?"})]:
        r = client.post(f"/v1/teams/lab/{path}", json=body, headers=OPS)
        assert r.status_code == 403, (path, r.text)
        assert client.post(f"/v1/teams/lab/{path}", json=body, headers=READ).status_code == 403
        assert client.post(f"/v1/teams/lab/{path}", json=body).status_code == 401
        wrong = client.post(f"/v1/teams/lab/{path}", json=body, headers={"Authorization": "Bearer tok-lab-0002"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    # lab's token cannot write lab's memories into another team's bank through the body either
    sneaky = client.post("/v1/teams/lab/groups", json=ops_group, headers=LAB)
    assert sneaky.status_code == 422 and "does not match" in sneaky.json()["detail"]
    assert client.post("/v1/teams/ops/groups", json=ops_group, headers=OPS).status_code == 200
    assert client.post("/v1/graphs/slice/query", json={"question": "q"}, headers=LAB).status_code == 403
    assert client.post("/v1/graphs/slice/query", json={"question": "q"}).status_code == 401


def test_bad_bodies_are_refused_with_a_message(client, lab_bank):
    url = "/v1/teams/lab/search"
    cases = [
        ({"content": b"{not json", "headers": {**LAB, "content-type": "application/json"}}, "json"),
        ({"json": {"k": 3}}, "query"),
        ({"json": {"query": "x", "k": 0}}, "k"),
        ({"json": {"query": "x", "as_of": "last tuesday"}}, "as_of"),
        ({"json": {"query": "x", "top": 3}}, "top"),
    ]
    for kwargs, word in cases:
        r = client.post(url, **({"headers": LAB} | kwargs))
        assert r.status_code == 422, (kwargs, r.text)
        assert word in r.json()["message"].lower()
    bad_group = client.post("/v1/teams/lab/groups", json={"team": "lab", "group_id": "g9"}, headers=LAB)
    assert bad_group.status_code == 422 and "memories" in bad_group.json()["message"]

    big = client.post(url, json={"query": "x" * 70_000}, headers=LAB)  # Content-Length over 64 KiB
    assert big.status_code == 413

    def chunks():  # no Content-Length: the limit counts the bytes as they stream
        yield b'{"query": "'
        for _ in range(20):
            yield b"y" * 8192
        yield b'"}'

    streamed = client.post(url, content=chunks(), headers={**LAB, "content-type": "application/json"})
    assert streamed.status_code == 413 and "limit" in streamed.json()["detail"]

    for name in ["..", "..%2F..%2Fetc", "lab.sqlite", "-lab"]:
        r = client.post(f"/v1/teams/{name}/search", json={"query": "x"}, headers=LAB)
        assert r.status_code in (403, 404, 422), (name, r.status_code)


def test_chat_completions_on_the_served_llm(client):
    body = {"model": "scripted", "messages": [{"role": "user", "content": "say hello"}]}
    r = client.post("/v1/chat/completions", json=body, headers=READ)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["choices"][0]["message"]["content"] == "hello from the scripted model"
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + out["usage"]["completion_tokens"]
    assert client.post("/v1/chat/completions", json={**body, "stream": True}, headers=READ).status_code == 422
    assert client.post("/v1/chat/completions", json=body).status_code == 401


def _replica_actors(deployment: str):
    import ray

    return [(a["name"], a["namespace"]) for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith("SERVE_REPLICA::") and f"{APP}#{deployment}#" in a["name"]]


def _kill(deployment: str) -> set[str]:
    """Every replica of ``deployment`` killed (the embedder has two by default), so its callers must wait for new ones."""
    import ray

    killed = set()
    for name, namespace in _replica_actors(deployment):
        ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
        killed.add(name)
    assert killed, deployment
    return killed


def _until_ok(send, seconds: float = 120.0) -> httpx.Response:
    """Retry while Serve replaces a replica: 503s (never a 500) until a 200, within a bounded wait."""
    deadline = time.monotonic() + seconds
    while True:
        r = send()
        if r.status_code == 200 or time.monotonic() > deadline:
            return r
        assert r.status_code == 503, r.text
        time.sleep(1)


def test_two_ingress_replicas_write_one_team_on_a_postgres_bank(served):
    """``serving.banks_url`` on PostgreSQL and ``serving.deployments.ingress.replicas: 2`` in the real Serve app:
    writes for one team sent at once all land, through both replicas, with one unbroken decision log."""
    import psycopg
    from ray import serve

    from memgraft.collab.bank import open_bank
    from tests.collab_bank_helpers import chained_logs

    base, _, url = served
    replicas = serve.status().applications[APP].deployments["ingress"].replica_states
    assert replicas.get("RUNNING") == 2, replicas
    results: dict[int, httpx.Response | Exception] = {}

    def post(i: int) -> None:
        body = group("rel", f"pg{i}", 10,  # one time for all: the order the replicas commit in is free
                     ("team", f"The deploy window moves to slot {i}."),
                     ("individual", f"Note {i}: I deployed in the old window."))
        try:
            with httpx.Client(base_url=base, timeout=120) as c:
                results[i] = c.post("/v1/teams/rel/groups", json=body, headers=REL)
        except httpx.HTTPError as err:
            results[i] = err

    threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert all(isinstance(r, httpx.Response) and r.status_code == 200 for r in results.values()), results
    assert len(results) == 8
    with psycopg.connect(url) as conn:  # each replica holds its own connection to the bank
        others = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchone()[0]
    assert others >= 2, others
    with httpx.Client(base_url=base, timeout=120) as c:
        hits = c.post("/v1/teams/rel/search", json={"query": "When is the deploy window?", "k": 10}, headers=REL)
    assert hits.status_code == 200, hits.text
    with open_bank(url) as bank:
        assert bank.stats("rel")["groups"] == 8 and chained_logs(bank, "rel") > 0


def test_a_replica_killed_mid_request_is_replaced(client, lab_bank):
    import ray

    slow_chat = ("/v1/chat/completions", {"messages": [{"role": "user", "content": "slow: take your time"}]})
    slow_query = ("/v1/graphs/slice/query", {"question": "slow: " + QUESTION, "method": "naive"})
    in_flight: dict[str, httpx.Response | Exception] = {}

    def ask(path, body):
        try:
            in_flight[path] = client.post(path, json=body, headers=READ)
        except httpx.HTTPError as err:
            in_flight[path] = err

    held = gate(SLOW_GATE)
    threads = [threading.Thread(target=ask, args=req) for req in (slow_chat, slow_query)]
    for t in threads:
        t.start()
    # A slow request is held inside the LLM replica (the other is held or queued behind it, one batch at a
    # time, or on its way: either way a lost replica must answer it 200 or 503).
    wait_until(lambda: ray.get(held.count.remote()) >= 1, "a slow request inside the LLM replica")
    killed = _kill("llm")
    ray.get(held.open.remote())  # what Serve retries on the new replica goes through
    for t in threads:
        t.join(timeout=120)
    for path, lost in in_flight.items():  # a lost replica is "retry" (503), never a model error or a bug
        assert isinstance(lost, httpx.Response) and lost.status_code in (200, 503), (path, lost)
    fast = {"messages": [{"role": "user", "content": "hello"}]}
    assert _until_ok(lambda: client.post("/v1/chat/completions", json=fast, headers=READ)).status_code == 200
    assert not killed & {n for n, _ in _replica_actors("llm")}


def test_killed_embedder_and_ingress_replicas_are_replaced(client, lab_bank):
    killed = {d: _kill(d) for d in ("embedder", "ingress")}
    r = _until_ok(lambda: client.post("/v1/teams/lab/search", json={"query": "Where are samples stored?"},
                                      headers=LAB))
    assert r.status_code == 200, r.text
    assert r.json()["hits"][0]["memory"]["maintained"].startswith("Samples are stored")
    for deployment, names in killed.items():
        assert not names & {n for n, _ in _replica_actors(deployment)}
