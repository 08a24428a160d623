"""Serve's HTTP proxy answers a request whose ingress replica died with the documented 503, not a bare 500.

A request in flight in an ingress replica that dies fails in the proxy with Ray's actor error.
Serve's router retries on another replica only a request no replica has accepted yet; one already
accepted fails, and Ray 2.60's proxy then sends no response of its own for a 500
(``send_http_response_on_exception`` answers only 408, 429 and 503), so uvicorn sends plain-text
"Internal Server Error". This ASGI middleware runs in the proxy (Serve loads it from
``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``, set on the controller by :func:`start_options` and
inherited by the proxies it starts) and answers any request that got no response start with the
ingress's own 503 ``ReplicaUnavailable`` JSON and ``Retry-After``. Every route is safe to send
again: reads are reads, and a group that went in before its replica died is 409 ``AlreadyApplied``
on the retry. Responses that started are passed through untouched.

Imports nothing but the standard library: it loads in the proxy's process.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Awaitable, Callable

ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK = "serving.proxy_guard:middlewares"
RETRY_AFTER_S = 1  # serving.errors.RETRY_AFTER_S: the same promise as the ingress's own 503s

log = logging.getLogger("ray.serve")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

BODY = json.dumps({"error": "ReplicaUnavailable",
                   "detail": "the replica serving this request stopped before it answered (retry: Serve is "
                             "replacing the replica; a group that went in meanwhile is 409 AlreadyApplied)"},
                  separators=(",", ":")).encode()


class AnswerLostReplicas:
    """Pure ASGI: a request with no response start when the app returns (or raises) gets the 503 JSON."""

    def __init__(self, app: Callable[..., Awaitable[None]]):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: dict[str, Any]) -> None:
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            if started:
                raise
            log.warning("a request got no response from its replica; answered 503 ReplicaUnavailable", exc_info=True)
        if not started:
            await _unavailable(send)


async def _unavailable(send: Send) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode()),
               (b"retry-after", str(RETRY_AFTER_S).encode()), (b"x-content-type-options", b"nosniff")]
    try:
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": BODY})
    except Exception:  # noqa: BLE001 - the client is gone too: nobody to answer
        return


def middlewares() -> list[Any]:
    """What Serve's proxy calls (``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``): Starlette ``Middleware`` items."""
    from starlette.middleware import Middleware

    return [Middleware(AnswerLostReplicas)]


def start_options() -> dict[str, Any]:
    """``serve.start`` keywords that put the guard in every proxy this Serve instance starts."""
    return {"controller_options": {"runtime_env": {"env_vars": {ENV: CALLBACK}}}}
