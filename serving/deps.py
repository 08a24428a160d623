"""What every route takes from a request: its bearer token, the app's service and access, checked names.

Shared by :mod:`serving.api` (the writing and answering routes) and
:mod:`serving.reads` (the read-only routes the web page browses with), so both
read the token and the names the same way.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from serving.access import Access
from serving.names import NAME, TRACE
from serving.service import Service

_bearer = HTTPBearer(auto_error=False, description="a team token (its team's memories) or a reader token (graphs)")
Token = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
Team = Annotated[str, Path(pattern=NAME.pattern, description="the team; its bank is <banks_dir>/<team>.sqlite")]
Graph = Annotated[str, Path(pattern=NAME.pattern, description="a graph folder directly under graphs_dir")]
TraceId = Annotated[str, Path(pattern=TRACE.pattern, description="the trace_id a query returned")]


def token_of(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials else None


def _service(request: Request) -> Service:
    return request.app.state.service


def _access(request: Request) -> Access:
    return request.app.state.access


ServiceDep = Annotated[Service, Depends(_service)]
AccessDep = Annotated[Access, Depends(_access)]
