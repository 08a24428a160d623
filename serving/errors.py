"""Exceptions to HTTP answers: what the caller did wrong is a 4xx with the library's own message.

A bank that refuses a group, an unknown graph, a bad name or a body that does not
validate says why, with the status a client can act on (409 for a group already
applied, 422 for a body, 401/403 for tokens); a model that fails is a 502, a
replica being replaced a 503 with ``Retry-After``. Only a bug is a 500.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from memgraft.collab.bank import BankError, EmbedderMismatch, GroupAlreadyApplied, OutOfOrderGroup, StaleDecision
from memgraft.graph.folder import GraphFolderError
from memgraft.models.llm.openai_backend import LLMServerError
from memgraft.models.llm.session import StructuredOutputError
from serving.access import Forbidden, Unauthorized
from serving.chat import Unsupported
from serving.names import BadName
from serving.service import AlreadyApplied, NotFound, TeamMismatch

log = logging.getLogger("ray.serve")

STATUS: dict[type[BaseException], int] = {
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    AlreadyApplied: 409, GroupAlreadyApplied: 409, OutOfOrderGroup: 409, StaleDecision: 409, EmbedderMismatch: 409,
    GraphFolderError: 409,
    BankError: 400,
    ValueError: 400,
    BadName: 422, TeamMismatch: 422, Unsupported: 422, ValidationError: 422,
    StructuredOutputError: 502, LLMServerError: 502,
    TimeoutError: 504,
}


def _unavailable() -> tuple[type[BaseException], ...]:
    """Ray's "the replica is gone or busy" errors: the request may be retried once Serve replaces it."""
    from ray import exceptions as rex
    from ray.serve import exceptions as sex

    names = [(rex, "RayActorError"), (rex, "ActorUnavailableError"), (sex, "BackPressureError"),
             (sex, "DeploymentUnavailableError"), (sex, "RequestCancelledError")]
    return tuple(getattr(mod, n) for mod, n in names if hasattr(mod, n))


def _answer(status: int, exc: BaseException) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if status == 503:
        headers["Retry-After"] = "1"
    if status >= 500:
        log.warning("answered %d: %s: %s", status, type(exc).__name__, exc)
    detail = str(exc) or type(exc).__name__
    if status == 503:  # Ray's message goes on with actor ids, pids and addresses: keep its first line
        detail = detail.strip().splitlines()[0] + " (retry: Serve is replacing the replica)"
    return JSONResponse({"detail": detail, "error": type(exc).__name__}, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    for kind, status in STATUS.items():
        app.add_exception_handler(kind, lambda _r, exc, status=status: _answer(status, exc))
    for kind in _unavailable():
        app.add_exception_handler(kind, lambda _r, exc: _answer(503, exc))
    app.add_exception_handler(RequestValidationError, _invalid_body)


async def _invalid_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with a one-line message beside FastAPI's list of errors."""
    errors = jsonable_encoder(exc.errors())
    message = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors)
    return JSONResponse({"detail": errors, "message": message or "invalid request"}, status_code=422)
