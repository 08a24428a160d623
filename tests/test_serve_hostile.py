"""Hostile and concurrent input to the service, in process (issue 12): each case failed before its fix.

The API runs on FastAPI's TestClient over in-process doubles, so these take seconds;
``test_serve_load.py`` runs writers and readers against the real application.
"""

from __future__ import annotations

import gc
import time

import pytest

from memgraft.collab.maintain import rules

ADVERSARIAL = [("", "the x "), ("", "with x as the y "), ("", "set the x to "), ("", " "), ("", "a. "), ("Log: ", "x")]


def _read(text: str) -> None:
    """Everything the rules read of a memory, with the caches (keyed by the text's head) cleared first."""
    for cached in (rules._claims, rules._specific_tokens, rules._content_words):
        cached.cache_clear()
    rules.claims(text), rules.content_words(text), rules.specific_tokens(text), rules.negated_specifics(text)
    rules.has_change_cue(text), rules.has_prohibition_cue(text), rules.strip_label(text)
    rules.claim_verdict(text + " y", text), rules.overlap(text, text + " y")


def _cost(text: str, repeats: int = 5, budget_s: float = 0.25) -> float:
    """Best of at least ``repeats`` runs, more while they have taken under ``budget_s``, in this thread's CPU
    time with the garbage collector off (as tests/test_bounded_features.py measures)."""
    best, spent, runs = float("inf"), 0.0, 0
    gc.collect()
    gc.disable()
    try:
        while runs < repeats or spent < budget_s:
            t0 = time.thread_time()
            _read(text)
            took = time.thread_time() - t0
            best, spent, runs = min(best, took), spent + took, runs + 1
    finally:
        gc.enable()
    return best


@pytest.mark.parametrize("prefix, unit", ADVERSARIAL, ids=lambda t: repr(t[:10]))
def test_the_rules_read_a_megabyte_for_the_cost_of_its_head(prefix, unit):
    """The rules read a note's first rules.READ_CHARS: a crafted megabyte costs what those cost (measured
    0.9-1.7x), where reading it all would cost about 256x even in linear time (it was quadratic: 2.2 s at
    16 KB, hours at 1 MB). A ratio of times measured in the same run, no seconds asserted."""
    text = prefix + unit * (((1 << 20) - len(prefix)) // len(unit))
    head = text[:rules.READ_CHARS]
    ratio = _cost(text) / max(_cost(head), 1e-6)
    assert ratio < 4, f"a megabyte cost {ratio:.1f}x its first {rules.READ_CHARS} characters"


def test_the_rules_still_read_ordinary_notes():
    [claim] = rules.claims("The primary assay is qPCR from now on.")
    assert claim.attribute == {"primary", "assay"} and claim.value == {"qpcr"} and not claim.negated
    assert rules.claim_verdict("I ran batch 3 with ELISA as the primary assay.",
                               "The primary assay is qPCR from now on.") == "conflict"
    assert rules.strip_label("Log: ran ELISA") == "ran ELISA" and rules.has_change_cue("switch to B now")


# -- the API in process ---------------------------------------------------------------------------

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402
import threading  # noqa: E402

import httpx  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from memgraft.models.llm.base import ChatRequest, Completion  # noqa: E402
from memgraft.models.reranker import CosineReranker  # noqa: E402
from serving.access import Access  # noqa: E402
from serving.api import create_api, serve_state  # noqa: E402
from serving.isolate import Failed, per_caller  # noqa: E402
from serving.service import Models, Service  # noqa: E402
from serving.settings import load_profile  # noqa: E402
from tests.doubles import HashEmbedder, ScriptedLLM  # noqa: E402
from tests.waiting import DEADLINE_S  # noqa: E402

TOKENS = {"teams": {"lab": "tok-lab-0001", "ops": "tok-ops-0001"}, "readers": ["tok-read-0001"]}
LAB, OPS = {"Authorization": "Bearer tok-lab-0001"}, {"Authorization": "Bearer tok-ops-0001"}
CAPS = ["serving.max_group_memories=8", "serving.max_memory_chars=8192", "serving.max_k=20",
        "serving.max_chat_tokens=64", "serving.max_body_bytes=1048576"]


def _group(gid, day=6, *texts, team="lab", hour=9):
    texts = texts or ("The primary assay is qPCR from now on.", "I ran batch 3 with ELISA as the primary assay.")
    return {"team": team, "group_id": gid, "time": f"2025-01-{day:02d}T{hour:02d}:00:00",
            "memories": [{"memory_id": f"{gid}-m{i}", "type": "team" if i == 0 else "individual", "author": "a",
                          "content": t} for i, t in enumerate(texts)]}


@pytest.fixture()
def service(tmp_path, settings):
    (tmp_path / "tokens.json").write_text(json.dumps(TOKENS))
    s = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules"})})
    _, serving = load_profile("local", [f"serving.banks_dir={tmp_path / 'banks'}", *CAPS])
    embedder = HashEmbedder()
    llm = ScriptedLLM(lambda r: json.dumps({"answer": "qPCR."}) if r.json_schema else "plain reply")
    service = Service(s, serving, Models(llm=llm, embedder=embedder, reranker=CosineReranker(embedder)))
    service.access = Access(str(tmp_path / "tokens.json"))
    yield service
    service.close()


@pytest.fixture()
def api(service):
    return TestClient(serve_state(create_api(), service, service.access))


def _raw(api, url, body, headers=LAB):
    """Post a body as written (a lone surrogate stays a JSON escape, as an attacker sends it)."""
    return api.post(url, content=json.dumps(body).encode(), headers={**headers, "content-type": "application/json"})


def test_a_memory_over_the_length_cap_is_413_and_healthz_answers_while_one_at_the_cap_applies(service):
    """The write at the cap is held inside its work (in the thread that plans and applies it, holding the team's
    write turn) until /healthz has answered: were the write's work on the event loop, or /healthz behind the
    team's turn, /healthz could not answer until the hold gave up, and the order below would differ."""
    order: list[str] = []
    entered, release = threading.Event(), threading.Event()

    async def run():
        app = serve_state(create_api(), service, service.access)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            over = await c.post("/v1/teams/lab/groups", json=_group("g0", 5, "the x " * 8000), headers=LAB)
            assert over.status_code == 413 and "serving.max_memory_chars" in over.json()["detail"]
            assert (await c.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB)).status_code == 200
            real = service._apply

            def held(memory, group):
                entered.set()
                order.append("write held" if release.wait(DEADLINE_S) else "write gave up waiting")
                return real(memory, group)

            service._apply = held
            poison = _group("g2", 7, "the x " * (8192 // 6), "set the x to " * (8192 // 13), "the x " * 1364 + "is y")
            post = asyncio.create_task(c.post("/v1/teams/lab/groups", json=poison, headers=LAB))
            assert await asyncio.to_thread(entered.wait, DEADLINE_S)
            health = await c.get("/healthz")
            order.append("healthz answered")
            release.set()
            return (await post), health

    done, health = asyncio.run(run())
    assert health.status_code == 200 and order == ["healthz answered", "write held"], order
    assert done.status_code == 200, done.text  # and the held write, at the caps, then applies
    assert service.team("lab").bank.is_applied("lab", "g2")


def test_caps_on_group_size_k_and_max_tokens_name_their_setting(api):
    many = _group("g1", 6, *[f"note {i}" for i in range(9)])
    r = api.post("/v1/teams/lab/groups", json=many, headers=LAB)
    assert r.status_code == 413 and "serving.max_group_memories" in r.json()["detail"]
    assert api.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB).status_code == 200
    for path, body in [("search", {"query": "assay", "k": 21}), ("answer", {"question": "assay?", "k": 21})]:
        r = api.post(f"/v1/teams/lab/{path}", json=body, headers=LAB)
        assert r.status_code == 422 and "serving.max_k" in r.json()["detail"], r.text
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    r = api.post("/v1/chat/completions", json={**chat, "max_tokens": 65}, headers=LAB)
    assert r.status_code == 422 and "serving.max_chat_tokens" in r.json()["detail"]
    assert api.post("/v1/chat/completions", json={**chat, "max_tokens": 64}, headers=LAB).status_code == 200
    for extra in [{"logit_bias": {"1": 100}}, {"n": 8}, {"best_of": 4}]:  # nothing unlisted reaches vLLM
        assert api.post("/v1/chat/completions", json={**chat, **extra}, headers=LAB).status_code == 422
    assert api.post("/v1/chat/completions", json={**chat, "top_p": 0.5}, headers=LAB).status_code == 422  # local


def test_unencodable_text_is_422_at_the_boundary(api):
    assert api.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB).status_code == 200
    cases = [("/v1/teams/lab/groups", _group("g2", 7, "bad \ud800 text")),
             ("/v1/teams/lab/groups", {**_group("g3", 7), "group_id": "g\udfff"}),
             ("/v1/teams/lab/search", {"query": "assay \ud800"}),
             ("/v1/teams/lab/answer", {"question": "\ud800?"}),
             ("/v1/chat/completions", {"messages": [{"role": "user", "content": "\ud800"}]})]
    for url, body in cases:
        r = _raw(api, url, body)
        message = r.json()["message"]  # ours, or pydantic's where a length constraint reads the text first
        assert r.status_code == 422 and ("UTF-8" in message or "unicode" in message), (url, r.text)


def test_a_failed_batch_is_retried_per_caller_so_only_the_poisoned_caller_fails():
    from serving.embedder import EmbedderDeployment
    from serving.llm import LLMDeployment

    class Strict(HashEmbedder):
        def encode(self, texts):
            [t.encode("utf-8") for t in texts]
            return super().encode(texts)

    emb = EmbedderDeployment.func_or_class.__new__(EmbedderDeployment.func_or_class)
    emb.embedder = Strict()
    out = asyncio.run(per_caller(emb._encode_joint, [["a"], ["b \ud800"], ["c", "d"]]))
    assert isinstance(out[1], Failed) and isinstance(out[1].error, UnicodeEncodeError)
    assert out[0].shape == (1, 64) and out[2].shape == (2, 64)

    def generate(requests):
        if any("poison" in r.messages[-1]["content"] for r in requests):
            raise ValueError("bad request")
        return [Completion("ok", 1, 1) for _ in requests]

    llm = LLMDeployment.func_or_class.__new__(LLMDeployment.func_or_class)
    llm.llm = type("L", (), {"generate": staticmethod(generate)})()
    reqs = [ChatRequest([{"role": "user", "content": c}]) for c in ("a", "poison", "b")]
    out = asyncio.run(per_caller(llm._generate_joint, reqs))
    assert [o.text for o in (out[0], out[2])] == ["ok", "ok"] and isinstance(out[1], Failed)


def test_twenty_parallel_writers_to_one_team_all_succeed(service):
    groups = [_group(f"p{i:02d}", 8, f"Freezer {i} holds batch {i} from now on.",
                     f"I put batch {i} in freezer {i + 1}.") for i in range(20)]

    async def run():
        app = serve_state(create_api(), service, service.access)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await asyncio.gather(*(c.post("/v1/teams/lab/groups", json=g, headers=LAB) for g in groups))

    replies = asyncio.run(run())
    assert [r.status_code for r in replies] == [200] * 20, [r.text for r in replies if r.status_code != 200]
    bank = service.team("lab").bank
    assert all(bank.is_applied("lab", g["group_id"]) for g in groups)
    stored = {d.decision_id for d in bank.decisions("lab")}
    assert {d["decision_id"] for r in replies for d in r.json()["decisions"]} <= stored
    assert len(bank.memories("lab")) == 40


def test_the_bank_reuses_the_plans_vectors_instead_of_embedding_twice(service, api):
    assert api.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB).status_code == 200
    calls = service.models.embedder.calls
    texts = [t for call in calls for t in call]
    assert texts.count("The primary assay is qPCR from now on.") == 1, calls


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+05:00"])
def test_times_outside_the_calendar_are_422(api, when):
    assert api.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB).status_code == 200
    r = api.post("/v1/teams/lab/groups", json={**_group("g2"), "time": when}, headers=LAB)
    assert r.status_code == 422 and "time" in r.json()["message"]
    for path, body in [("search", {"query": "assay", "as_of": when}), ("answer", {"question": "a?", "as_of": when})]:
        r = api.post(f"/v1/teams/lab/{path}", json=body, headers=LAB)
        assert r.status_code == 422 and "as_of" in r.json()["message"], r.text


def test_empty_groups_unknown_fields_and_boolean_counts_are_422(api):
    assert api.post("/v1/teams/lab/groups", json={**_group("g1"), "memories": []}, headers=LAB).status_code == 422
    assert api.post("/v1/teams/lab/groups", json={**_group("g1"), "extra": 1}, headers=LAB).status_code == 422
    sneaky = _group("g1")
    sneaky["memories"][0]["valid"] = False
    assert api.post("/v1/teams/lab/groups", json=sneaky, headers=LAB).status_code == 422
    assert api.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB).status_code == 200
    r = api.post("/v1/teams/lab/search", json={"query": "assay", "k": True}, headers=LAB)
    assert r.status_code == 422 and "k" in r.json()["message"]


def test_a_corrupt_or_old_bank_is_409_without_the_servers_path(service, api, tmp_path):
    banks = tmp_path / "banks"
    banks.mkdir(exist_ok=True)
    (banks / "ops.sqlite").write_bytes(b"this is not a database" * 100)
    r = api.post("/v1/teams/ops/search", json={"query": "x"}, headers=OPS)
    assert r.status_code == 409 and r.json()["error"] == "BankUnusable" and str(tmp_path) not in r.text, r.text
    assert api.post("/v1/teams/lab/groups", json=_group("g1"), headers=LAB).status_code == 200
    service.close()
    with sqlite3.connect(banks / "lab.sqlite") as db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    r = api.post("/v1/teams/lab/search", json={"query": "x"}, headers=LAB)
    assert r.status_code == 409 and "schema" in r.json()["detail"] and str(tmp_path) not in r.text, r.text


def test_a_rotated_token_of_the_same_length_and_mtime_is_seen(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"teams": {"lab": "tok-lab-AAAA"}}))
    access = Access(str(path))
    access.require_team("tok-lab-AAAA", "lab")
    st = path.stat()
    path.write_text(json.dumps({"teams": {"lab": "tok-lab-BBBB"}}))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the old mtime put back
    with pytest.raises(PermissionError):
        access.require_team("tok-lab-AAAA", "lab")
    access.require_team("tok-lab-BBBB", "lab")
