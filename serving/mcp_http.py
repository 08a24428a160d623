"""MCP at ``/mcp`` in the ingress's FastAPI app (streamable HTTP), behind the REST API's bearer tokens.

Two checks, as for REST. At the door, a request without a known token is
answered 401 before MCP reads it. In each tool, the token of the request that
carries the call is checked against the team or graph it asks for, by the same
:class:`~serving.access.Access`, so a team token's session never reaches another
team even though it got in. Checking per request rather than per session also
means a rotated-out token stops working at once.

The transport is stateless with JSON answers: any ingress replica can answer any
request (Serve does not route a session back to the replica that opened it), and
the service, access and limits are read from ``app.state`` per call, as the
routes read them. Host and Origin checks against DNS rebinding are off: they
protect servers that trust whoever reaches them, and this one trusts only a token.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, Callable

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from serving.access import Access, Unauthorized
from serving.errors import SafeJSON
from serving.mcp import build_server
from serving.service import Service

PATH = "/mcp"


def bearer(headers: Any) -> str | None:
    value = (headers or {}).get("authorization") or ""
    scheme, _, token = value.partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


class Tokens:
    """The HTTP gate: the calling request's bearer token, judged by the app's :class:`Access`."""

    def __init__(self, api: FastAPI, write_turn: Callable[[str], Any]):
        self.api, self.write_turn = api, write_turn

    @property
    def service(self) -> Service:
        return self.api.state.service

    def team(self, ctx: Any, team: str) -> None:
        self.api.state.access.require_team(bearer(ctx.headers), team)

    def reader(self, ctx: Any) -> None:
        self.api.state.access.require_reader(bearer(ctx.headers))


class Door:
    """ASGI: a request with no known token gets REST's 401 and never reaches the MCP transport."""

    def __init__(self, app: Any, access: Callable[[], Access]):
        self.app, self.access = app, access

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        try:
            self.access().require_any(bearer(headers))
        except Unauthorized as err:
            response = SafeJSON({"detail": str(err), "error": "Unauthorized"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mount(api: FastAPI, write_turn: Callable[[str], Any]) -> None:
    """Serve MCP at ``/mcp`` in ``api``; its session manager runs inside the app's lifespan."""
    server = build_server(Tokens(api, write_turn))
    server.streamable_http_app(  # builds the session manager; its Starlette app is not used, only the endpoint
        stateless_http=True, json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    manager = server.session_manager
    api.router.routes.append(Route(PATH, endpoint=Door(StreamableHTTPASGIApp(manager), lambda: api.state.access),
                                   methods=["GET", "POST", "DELETE"]))
    inner = api.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any):
        async with manager.run(), inner(app) as state:
            yield state

    api.router.lifespan_context = lifespan
