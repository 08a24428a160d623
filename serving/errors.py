"""Exceptions to HTTP answers: what the caller did wrong is a 4xx with the library's own message.

A bank that refuses a group, an unknown graph, a bad name or a body that does not
validate says why, with the status a client can act on (409 for a group already
applied or out of order, 413 for too much work, 422 for a body, 401/403 for
tokens); a model that fails is a 502. A 503 always carries ``Retry-After``: a
replica being replaced, or a write that lost to other writers, is safe to send
again as it was. Only a bug is a 500. Messages never carry a server path, and a
refused body is not echoed back (it may be a megabyte, or not encodable).
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from memgraft.collab.bank import (BankError, BankTimeout, BankUnavailable, EmbedderMismatch, GroupAlreadyApplied,
                                  OutOfOrderGroup, StaleDecision)
from memgraft.graph.folder import GraphFolderError
from memgraft.models.llm.base import PromptTooLong
from memgraft.models.llm.openai_backend import LLMServerError
from memgraft.models.llm.session import StructuredOutputError
from serving.access import Forbidden, Unauthorized
from serving.budget import WriteCancelled, WriteTimeout
from serving.caps import OverLimit, TooLarge
from serving.chat import Unsupported
from serving.names import BadName
from serving.service import AlreadyApplied, BankUnusable, Busy, NotFound, TeamMismatch

log = logging.getLogger("ray.serve")

RETRY_AFTER_S = 1

STATUS: dict[type[BaseException], int] = {
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    AlreadyApplied: 409, GroupAlreadyApplied: 409, OutOfOrderGroup: 409, EmbedderMismatch: 409,
    BankUnusable: 409, GraphFolderError: 409, sqlite3.DatabaseError: 409,
    TooLarge: 413, PromptTooLong: 413,
    BankError: 400,
    ValueError: 400,
    BadName: 422, TeamMismatch: 422, Unsupported: 422, ValidationError: 422, OverLimit: 422,
    StructuredOutputError: 502, LLMServerError: 502,
    Busy: 503, StaleDecision: 503, sqlite3.OperationalError: 503, BankUnavailable: 503, BankTimeout: 503,
    WriteTimeout: 503, WriteCancelled: 503,
    TimeoutError: 504,
}

_PATH = re.compile(r"(?<![\w.])(?:/[^\s/'\"():]+)+/([^\s/'\"():]+)")


class SafeJSON(JSONResponse):
    """JSON with non-ASCII escaped: a lone surrogate in a message is written as ``\\ud800``, not a 500."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def scrub(text: str) -> str:
    """An absolute path reduced to its last part: where the server keeps files is not the client's business."""
    return _PATH.sub(r"\1", text)


def _unavailable() -> tuple[type[BaseException], ...]:
    """Ray's "the replica is gone or busy" errors: the request may be retried once Serve replaces it."""
    from ray import exceptions as rex
    from ray.serve import exceptions as sex

    names = [(rex, "RayActorError"), (rex, "ActorUnavailableError"), (sex, "BackPressureError"),
             (sex, "DeploymentUnavailableError"), (sex, "RequestCancelledError")]
    return tuple(getattr(mod, n) for mod, n in names if hasattr(mod, n))


def _answer(status: int, exc: BaseException, replica: bool = False) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_S)
    if status >= 500:
        log.warning("answered %d: %s: %s", status, type(exc).__name__, exc)
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, ValidationError):  # pydantic's own text quotes each refused value: name the field instead
        detail = validation_message(exc)
    if replica:  # Ray's message goes on with actor ids, pids and addresses: keep its first line
        detail = detail.strip().splitlines()[0] + " (retry: Serve is replacing the replica)"
    return SafeJSON({"detail": scrub(detail), "error": type(exc).__name__}, status_code=status, headers=headers)


def _database() -> dict[type[BaseException], int]:
    """A PostgreSQL bank's server gone or refusing (503: retry), or a statement it refused (409)."""
    try:
        import psycopg
    except ImportError:  # an environment without the PostgreSQL driver has no such bank
        return {}
    return {psycopg.OperationalError: 503, psycopg.DatabaseError: 409}


def validation_message(exc: ValidationError) -> str:
    """Each refused field and why, never the value refused."""
    parts = [(".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, "))
             for e in exc.errors(include_input=False, include_url=False)]
    return "; ".join(f"{loc}: {msg}" if loc else msg for loc, msg in parts) or "invalid value"


def install(app: FastAPI) -> None:
    for kind, status in {**STATUS, **_database()}.items():
        app.add_exception_handler(kind, lambda _r, exc, status=status: _answer(status, exc))
    for kind in _unavailable():
        app.add_exception_handler(kind, lambda _r, exc: _answer(503, exc, replica=True))
    app.add_exception_handler(RequestValidationError, _invalid_body)
    app.add_exception_handler(HTTPException, _http_error)


async def _http_error(_request: Request, exc: HTTPException) -> JSONResponse:
    """Starlette's own refusals (no route, wrong method, a body that is not UTF-8 JSON) with ``error`` as well."""
    try:
        kind = HTTPStatus(exc.status_code).phrase.title().replace(" ", "").replace("-", "")
    except ValueError:
        kind = "HTTPError"
    detail = "the body is not valid JSON in UTF-8" if exc.detail == "There was an error parsing the body" else exc.detail
    return SafeJSON({"detail": detail, "error": kind}, status_code=exc.status_code, headers=exc.headers)


async def _invalid_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with a one-line message beside FastAPI's list of errors (without the input each refused)."""
    errors = jsonable_encoder([{k: v for k, v in e.items() if k != "input"} for e in exc.errors()])
    message = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors)
    return SafeJSON({"detail": errors, "message": message or "invalid request", "error": "RequestValidationError"},
                    status_code=422)
