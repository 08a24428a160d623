"""The proxy's guard: a request its replica never answered gets the documented 503 JSON (issue 32).

Served under uvicorn's own behaviour, an ASGI app that returns or raises without starting a
response is a plain-text 500; the guard turns exactly those into 503 ``ReplicaUnavailable`` with
``Retry-After`` and leaves every answer that started alone. The real proxy with a killed ingress
is tests/test_serve_load.py.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from serving import proxy_guard


class ActorDied(Exception):
    """Stands in for Ray's actor error, as the proxy's response generator raises it."""


async def _call(app, path: str = "/v1/teams/t/search") -> list[dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    await proxy_guard.AnswerLostReplicas(app)({"type": "http", "method": "POST", "path": path, "headers": []},
                                              receive, send)
    return sent


async def _silent(scope, receive, send):  # Ray 2.60's proxy after a replica died: no response for a 500
    return None


async def _raises(scope, receive, send):
    raise ActorDied("The actor died unexpectedly before finishing this task.")


async def _answers(scope, receive, send):
    await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"error":"Bug","detail":"x"}'})


async def _dies_midway(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    raise ActorDied("gone after the headers")


@pytest.mark.parametrize("app", [_silent, _raises], ids=["returned", "raised"])
def test_a_request_with_no_answer_gets_503_json_with_retry_after(app):
    start, body = asyncio.run(_call(app))
    assert start["status"] == 503 and dict(start["headers"])[b"retry-after"] == b"1"
    assert dict(start["headers"])[b"content-type"] == b"application/json"
    out = json.loads(body["body"])
    assert out["error"] == "ReplicaUnavailable" and "AlreadyApplied" in out["detail"]


def test_an_answer_that_started_is_passed_through_untouched():
    sent = asyncio.run(_call(_answers))
    assert [m.get("status") for m in sent] == [500, None] and b'"Bug"' in sent[1]["body"]
    with pytest.raises(ActorDied):  # headers already went out: the guard cannot answer again
        asyncio.run(_call(_dies_midway))


def test_websockets_and_lifespan_are_not_touched():
    seen: list[str] = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    async def nothing():
        return {}

    async def drop(message):
        raise AssertionError("the guard answered a non-HTTP scope")

    for kind in ("websocket", "lifespan"):
        asyncio.run(proxy_guard.AnswerLostReplicas(app)({"type": kind}, nothing, drop))
    assert seen == ["websocket", "lifespan"]


def test_serve_loads_the_guard_from_the_documented_callback():
    from ray.serve._private.http_util import validate_http_proxy_callback_return

    module, name = proxy_guard.CALLBACK.split(":")
    assert module == proxy_guard.__name__
    items = validate_http_proxy_callback_return(getattr(proxy_guard, name)())
    assert [m.cls for m in items] == [proxy_guard.AnswerLostReplicas]
    env = proxy_guard.start_options()["controller_options"]["runtime_env"]["env_vars"]
    assert env == {proxy_guard.ENV: proxy_guard.CALLBACK}
