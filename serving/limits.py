"""Request bodies over ``max_body_bytes`` are refused with 413 before any handler sees them.

A declared ``Content-Length`` over the limit is refused at once. A body streamed
without one is read here up to the limit and refused the moment it passes it;
otherwise the bytes read are replayed to the application. Doing it as ASGI
middleware, ahead of FastAPI, matters: FastAPI turns any error raised while it
reads a body into a 400 "error parsing the body".
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"request body is over the limit of {limit} bytes (serving.max_body_bytes)",
                       "error": "TooLarge"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """``max_body_bytes``: a number, or a function read per request (the limit arrives with the replica's settings)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int | Callable[[], int]):
        self.app = app
        self._limit = max_body_bytes if callable(max_body_bytes) else (lambda: max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self._limit()
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                if int(declared) > limit:
                    await _refuse(send, limit)
                    return
            except ValueError:
                pass  # a malformed length: let the server and the body reader deal with it
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                await _refuse(send, limit)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as the server would report it

        await self.app(scope, replay, send)
