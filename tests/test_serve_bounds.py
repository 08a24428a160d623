"""Bounded work and the documented error contract, in process (issue 32).

The API runs on FastAPI's TestClient over in-process doubles: a group dated far ahead,
errors that must not echo what the client sent, bodies that cannot be parsed, the page's
security headers, a prompt over the model's context, and a slow LLM held for one team
while another's short call answers.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from memgraft.models.reranker import CosineReranker
from serving.access import Access
from serving import schemas
from serving.api import create_api, serve_state
from serving.mcp import build_server
from serving.mcp_strict import strict_tool
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


# -- errors: always JSON with `error`, never the request's values ------------------------------


def test_every_error_body_has_error_and_echoes_nothing(api):
    secret = "9999-12-31T23:59:59-12:00"
    assert api.post("/v1/teams/lab/groups", json=_group("g1", "2025-01-01T00:00:00"), headers=LAB).status_code == 200
    r = api.get("/v1/teams/lab/memories", params={"as_of": secret}, headers=LAB)
    assert r.status_code == 422 and "input_value" not in r.text and secret not in r.text, r.text
    assert r.json()["error"] == "ValidationError" and r.json()["detail"].startswith("time is outside the calendar")
    answers = [
        r,
        api.post("/v1/teams/lab/groups", content=b'{"team": "\xff\xfe"}', headers={**LAB, "content-type": "application/json"}),
        api.post("/v1/teams/lab/groups", content=b'{"team": ', headers={**LAB, "content-type": "application/json"}),
        api.post("/v1/teams/lab/groups", content=b"x" * (4 << 20), headers={**LAB, "content-type": "application/json"}),
        api.post("/v1/teams/lab/search", json={"query": "q", "as_of": "SECRET-as-of"}, headers=LAB),
        api.get("/nowhere"), api.put("/v1/teams/lab/groups", headers=LAB),
    ]
    assert [a.status_code for a in answers] == [422, 400, 422, 413, 422, 404, 405]
    for a in answers:
        assert a.headers["content-type"] == "application/json" and a.json()["error"], a.text
        assert "SECRET" not in a.text and "input_value" not in a.text and "\\xff" not in a.text
    assert answers[3].json()["error"] == "TooLarge" and "serving.max_body_bytes" in answers[3].json()["detail"]


def test_the_page_sends_a_content_security_policy_and_every_answer_nosniff(api):
    for path in ["/ui/", "/ui/app.js", "/ui/style.css"]:
        r = api.get(path)
        assert r.status_code == 200 and "default-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff"
    r = api.get("/healthz")
    assert r.headers["x-content-type-options"] == "nosniff" and "content-security-policy" not in r.headers


def test_mcp_tools_refuse_unknown_arguments_without_echoing_values():
    async def add(team: str, group: schemas.GroupRequest) -> str:
        return "ok"

    tool = strict_tool(add, description="add")
    assert tool.parameters["additionalProperties"] is False
    good = _group("g1", "2025-01-01T00:00:00")
    assert set(tool.fn_metadata.validate_arguments({"team": "lab", "group": good})) == {"team", "group"}
    with pytest.raises(ValidationError) as err:
        tool.fn_metadata.validate_arguments({"team": "lab", "group": {**good, "time": "SECRET"}, "bogus": "SECRET2"})
    assert "bogus" in str(err.value) and "Extra inputs" in str(err.value) and "SECRET" not in str(err.value)

    class Gate:  # build_server only needs the gate when a tool runs
        service = None

    server = build_server(Gate())
    tools = asyncio.run(server.list_tools())
    assert len(tools) == 6 and all(t.input_schema.get("additionalProperties") is False for t in tools)


# -- the LLM, shared fairly ---------------------------------------------------------------------


def test_a_prompt_over_the_context_less_max_tokens_is_413_naming_the_limit(service, api):
    service.models.llm.context_tokens = 256  # the double stands for a model of a 256-token context
    hi = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    assert api.post("/v1/chat/completions", json=hi, headers=LAB).status_code == 200
    long = {"messages": [{"role": "user", "content": f"message {i}"} for i in range(200)], "max_tokens": 8}
    r = api.post("/v1/chat/completions", json=long, headers=LAB)
    assert r.status_code == 413 and r.json()["error"] == "PromptTooLong", r.text
    assert "context is 256 tokens" in r.json()["detail"] and "at most 248" in r.json()["detail"]
    assert "SmolLM2" in r.json()["detail"] or "tokenizer" in r.json()["detail"] or "estimate" in r.json()["detail"]
    near = {"messages": [{"role": "user", "content": "word " * 200}], "max_tokens": 64}  # fits alone, not with 64 more
    assert api.post("/v1/chat/completions", json={**near, "max_tokens": 1}, headers=LAB).status_code == 200
    assert api.post("/v1/chat/completions", json=near, headers=LAB).status_code == 413
    assert len(service.models.llm.requests) == 2  # the refused prompts never reached the model


def test_one_teams_slow_call_does_not_hold_another_teams_short_one(tmp_path, settings):
    import threading

    import httpx

    held, release = threading.Event(), threading.Event()

    def script(request):
        if "long task" in request.messages[-1]["content"]:
            held.set()
            assert release.wait(60), "the test never released the slow call"
            return "slow reply"
        return "quick reply"

    service = _service(tmp_path, settings, llm=ScriptedLLM(script))

    async def run():
        app = serve_state(create_api(), service, service.access)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as c:
            slow = asyncio.create_task(c.post("/v1/chat/completions", headers=LAB, json={
                "messages": [{"role": "user", "content": "a long task"}], "max_tokens": 64}))
            assert await asyncio.to_thread(held.wait, 30)  # team A's call is inside the model now
            quick = await c.post("/v1/chat/completions", headers=OPS, json={
                "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8})
            still_held = not slow.done()
            release.set()
            return quick, still_held, await slow

    try:
        quick, still_held, slow = asyncio.run(run())
    finally:
        release.set()
        service.close()
    assert quick.status_code == 200 and quick.json()["choices"][0]["message"]["content"] == "quick reply"
    assert still_held  # B answered while A's call was held
    assert slow.status_code == 200 and slow.json()["choices"][0]["message"]["content"] == "slow reply"


def _in_a_fresh_interpreter(check: str) -> None:
    """A deployment class's batched methods, called outside Serve, leave its ``@serve.batch`` queue bound to this
    process (unpicklable), so a later test's ``serve.run`` of it would fail: these run in their own interpreter."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tests.deployment_checks", check], capture_output=True, text=True,
                          timeout=600, cwd=str(Path(__file__).resolve().parent.parent))
    assert done.returncode == 0 and f"ok {check}" in done.stdout, (done.stdout[-2000:], done.stderr[-4000:])


def test_the_llm_deployment_answers_a_short_call_beside_a_held_batch_and_stops_a_cancelled_one():
    """Team A's long call holds one batch, team B's short call gets another (one batch at a time kept B waiting
    for A, past B's own timeout); a cancelled caller's rows get a deadline of now, which the backend's stopping
    criterion reads at every token (tests/deployment_checks.py)."""
    _in_a_fresh_interpreter("llm")


def test_the_transformers_backend_stops_a_row_at_its_deadline_and_refuses_an_overlong_prompt(settings):
    import time as clock

    from memgraft.models.llm.base import ChatRequest, PromptTooLong
    from memgraft.models.llm.transformers_backend import TransformersLLM

    llm = TransformersLLM.from_settings(settings)
    assert llm.context_tokens and llm.context_tokens >= 2048
    gone = ChatRequest([{"role": "user", "content": "Count from one to one thousand."}], max_new_tokens=12,
                       temperature=0.0, deadline=clock.time() - 1)  # its caller gave up already; same batch
    kept = ChatRequest([{"role": "user", "content": "Count from one to one thousand."}], max_new_tokens=12,
                       temperature=0.0)
    cut, whole = llm.generate([gone, kept])
    assert cut.finish_reason == "timeout" and cut.completion_tokens <= 2, cut
    assert whole.finish_reason in ("length", "stop") and whole.completion_tokens > 2, whole
    too_long = ChatRequest([{"role": "user", "content": "word " * llm.context_tokens}], max_new_tokens=8)
    with pytest.raises(PromptTooLong, match="context is"):
        llm.generate([too_long])


def test_the_token_counter_loads_once_when_many_threads_ask_at_once(tmp_path):
    """In a fresh interpreter (transformers not imported yet), as the ingress's first concurrent requests are:
    the lazy import raced and one thread fell back to 4 characters a token for good."""
    import subprocess
    import sys

    code = """
import sys, threading
from memgraft.config import load_settings
from memgraft.models.llm.tokens import TokenizerCounter, token_counter
s = load_settings("local")
barrier, got = threading.Barrier(8), []
def ask():
    barrier.wait()
    got.append(token_counter(s.models.llm, str(s.cache_path)))
threads = [threading.Thread(target=ask) for _ in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
assert len(got) == 8 and all(g is got[0] for g in got), got
assert isinstance(got[0], TokenizerCounter), got[0].name
print("ok", got[0].name)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(Path(__file__).resolve().parent.parent))
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
    assert "no tokenizer" not in done.stderr


# -- a write's budget -------------------------------------------------------------------------


class _HeldEmbedder(HashEmbedder):
    """Embeds a text that says "slow" only once ``release`` is set (and after ``pause_s``): a write held mid-plan."""

    def __init__(self, pause_s: float = 0.0):
        super().__init__()
        import threading

        self.entered, self.release, self.pause_s = threading.Event(), threading.Event(), pause_s

    def encode(self, texts):
        if any("slow" in t for t in texts):
            self.entered.set()
            assert self.release.wait(60), "the test never released the embedder"
            if self.pause_s:
                import time as clock

                clock.sleep(self.pause_s)  # the write's budget passes while the model "thinks"
        return super().encode(texts)


def _held_service(tmp_path, settings, embedder, overrides=()):
    service = _service(tmp_path, settings, overrides=overrides)
    service.models.embedder = embedder
    service.models.reranker = CosineReranker(embedder)
    return service


def test_a_write_past_write_timeout_s_is_503_and_writes_nothing(tmp_path, settings):
    embedder = _HeldEmbedder(pause_s=0.3)
    embedder.release.set()
    service = _held_service(tmp_path, settings, embedder, ["serving.write_timeout_s=0.1"])
    try:
        api = TestClient(serve_state(create_api(), service, service.access))
        r = api.post("/v1/teams/lab/groups", json=_group("g1", "2025-01-01T00:00:00", "a slow note", "another note"),
                     headers=LAB)
        assert r.status_code == 503 and r.json()["error"] == "WriteTimeout", r.text
        assert "serving.write_timeout_s" in r.json()["detail"] and r.headers["retry-after"]
        bank = service.team("lab").bank
        assert not bank.is_applied("lab", "g1") and bank.memories("lab") == []
        assert api.post("/v1/teams/lab/groups", json=_group("g2", "2025-01-02T00:00:00"), headers=LAB).status_code == 200
    finally:
        service.close()


def test_a_client_that_goes_away_cancels_its_write_before_the_commit(tmp_path, settings):
    import httpx

    embedder = _HeldEmbedder()
    service = _held_service(tmp_path, settings, embedder)

    async def run():
        app = serve_state(create_api(), service, service.access)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as c:
            post = asyncio.create_task(c.post("/v1/teams/lab/groups", headers=LAB, json=_group(
                "g1", "2025-01-01T00:00:00", "a slow note", "another note")))
            assert await asyncio.to_thread(embedder.entered.wait, 30)  # the write is planning, held in the model
            post.cancel()  # the client disconnects (Serve cancels the request the same way)
            with pytest.raises(asyncio.CancelledError):
                await post
            embedder.release.set()
            # the next write of the team waits for the cancelled one's thread to give up its turn
            return await c.post("/v1/teams/lab/groups", headers=LAB, json=_group("g2", "2025-01-02T00:00:00"))

    try:
        after = asyncio.run(run())
        assert after.status_code == 200, after.text
        bank = service.team("lab").bank
        assert not bank.is_applied("lab", "g1") and bank.is_applied("lab", "g2")
        assert {m.memory_id for m in bank.memories("lab")} == {"g2-m0", "g2-m1"}
    finally:
        embedder.release.set()
        service.close()


# -- the pair encoder on the embedder deployment ------------------------------------------------


def test_the_judges_second_opinion_is_asked_of_the_model_deployment_not_loaded_in_the_ingress(tmp_path, settings,
                                                                                             embedder):
    import numpy as np

    class Recording:  # stands for PairEncoderProxy: what the ingress would send to the embedder deployment
        def __init__(self):
            self.calls = []

        def probabilities(self, a, b, batch_size=64):
            self.calls.append((list(a), list(b)))
            return np.tile(np.asarray([[0.0, 0.0, 1.0]], np.float32), (len(a), 1))

    (tmp_path / "tokens.json").write_text(json.dumps(TOKENS))
    _, serving = load_profile("local", [f"serving.banks_dir={tmp_path / 'banks'}"])
    assert settings.hicomer.updater_policy == "judge" and settings.hicomer.judge_encoder
    second = Recording()
    service = Service(settings, serving, Models(llm=ScriptedLLM(["unused"]), embedder=embedder,
                                                reranker=CosineReranker(embedder), pair_encoder=second))
    try:
        service.add_group("lab", schemas.GroupRequest.model_validate(_group("g1", "2025-01-01T00:00:00")))
        assert service.team("lab").policy.second is second and second.calls
        assert ("I ran batch 3 with ELISA as the primary assay.", "The primary assay is qPCR from now on.") in [
            (a, b) for call in second.calls for a, b in zip(*call)]
    finally:
        service.close()


def test_the_embedder_deployment_answers_the_pair_encoders_probabilities():
    """Two callers at once in one batch, each its own rows, equal to the encoder's own (tests/deployment_checks.py)."""
    _in_a_fresh_interpreter("pairs")


def test_the_ingress_chat_awaits_the_llm_handle_so_a_gone_client_cancels_the_generation():
    """On the ingress the chat call awaits the deployment handle on the event loop (a worker thread blocked in
    ``.result()`` cannot be cancelled): a cancelled request cancels the handle's call, which Serve carries to
    the LLM replica, whose rows then stop (test_the_llm_deployment_...); the call also carries its deadline."""
    from serving.chat import complete_on

    seen: dict = {}

    class Method:
        def remote(self, requests):
            async def held():
                seen["deadline"] = requests[0].deadline
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    seen["cancelled"] = True
                    raise
            return held()

    class Handle:
        generate = Method()

    body = schemas.ChatCompletionRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=8)

    async def run():
        call = asyncio.create_task(complete_on(Handle(), "m", body, 600.0))
        while "deadline" not in seen:
            await asyncio.sleep(0.001)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(run())
    assert seen.get("cancelled") and seen["deadline"] > datetime.now(timezone.utc).timestamp()
