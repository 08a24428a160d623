"""The HTTP API: routes, bearer tokens, body limits and error answers, over a :class:`~serving.service.Service`.

The app reads what it serves from ``app.state`` (``service``, ``access``,
``chat``, ``max_body_bytes``), which the ingress replica fills in when it starts;
tests fill it with in-process models. Handlers check the token first, then run
the library's blocking calls in a worker thread, so the event loop keeps
answering (health checks included) while a model thinks. Writes to one team wait
their turn on an asyncio lock before taking a thread, so twenty writers to one
team hold one worker thread, not twenty. The same tools are served to agents over
MCP at ``/mcp`` (:mod:`serving.mcp_http`), with the same tokens and service, and
people browse them with the web page at ``/ui`` (:mod:`serving.webpage`) over
these routes and the read-only ones in :mod:`serving.reads`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Literal

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse

from serving import caps, chat, errors, mcp_http, reads, schemas, webpage
from serving.access import Access
from serving.budget import Budget
from serving.deps import AccessDep, Graph, ServiceDep, Team, Token, TraceId
from serving.deps import token_of as _token
from serving.headers import SecurityHeaders
from serving.limits import BodyLimit
from serving.service import Service

Chat = Callable[[schemas.ChatCompletionRequest], Awaitable[Any]]

def create_api() -> FastAPI:
    api = FastAPI(
        title="memgraft",
        description="HGMem question answering over document graphs, and HiCoMER validity-aware team memory.",
        version="0.1.0",
    )
    api.state.max_body_bytes = 1 << 20
    api.state.writers = {}
    api.add_middleware(BodyLimit, max_body_bytes=lambda: api.state.max_body_bytes)
    api.add_middleware(SecurityHeaders)  # outermost: the body limit's 413 carries the headers too
    errors.install(api)

    @api.get("/healthz", response_model=schemas.Health, tags=["service"])
    async def healthz(service: ServiceDep) -> schemas.Health:
        """Alive, and which models answer (the reranker's name says when it is the cosine fallback)."""
        return service.health()

    @api.post("/v1/graphs/{graph}/query", response_model=schemas.QueryResponse, tags=["graphs"])
    async def query(graph: Graph, body: schemas.QueryRequest, service: ServiceDep, access: AccessDep,
                    token: Token) -> schemas.QueryResponse:
        """Answer a question over a graph with HGMem (or an ablation or baseline); returns the final memory."""
        access.require_reader(_token(token))
        return await asyncio.to_thread(service.query, graph, body)

    @api.get("/v1/traces/{trace_id}", tags=["graphs"], responses={200: {"content": {"text/html": {}}}})
    async def trace(trace_id: TraceId, service: ServiceDep, access: AccessDep, token: Token,
                    format: Literal["json", "html"] = Query("json", description="html: the standalone page")) -> Any:
        """A query's step-by-step trace as JSON, or its memory drawn as one standalone HTML page."""
        access.require_reader(_token(token))
        out = await asyncio.to_thread(service.trace, trace_id, format == "html")
        return HTMLResponse(out) if format == "html" else out

    @api.post("/v1/teams/{team}/groups", response_model=schemas.GroupResponse, tags=["teams"])
    async def add_group(team: Team, group: schemas.GroupRequest, service: ServiceDep, access: AccessDep,
                        token: Token) -> schemas.GroupResponse:
        """Run one time-aligned memory group through the updater; returns every maintenance decision."""
        access.require_team(_token(token), team)
        async with _writer(api, team):
            budget = Budget(service.serving.write_timeout_s)
            try:
                return await asyncio.to_thread(service.add_group, team, group, budget)
            except asyncio.CancelledError:  # the client left (Serve cancels its request): the write stops uncommitted
                budget.cancelled.set()
                raise

    @api.post("/v1/teams/{team}/search", response_model=schemas.SearchResponse, tags=["teams"])
    async def search(team: Team, body: schemas.SearchRequest, service: ServiceDep, access: AccessDep,
                     token: Token) -> schemas.SearchResponse:
        """Validity-aware search of the team's memories (S_sem + λ·log σ(S_val)), now or as of a time."""
        access.require_team(_token(token), team)
        return await asyncio.to_thread(service.search, team, body)

    @api.post("/v1/teams/{team}/answer", response_model=schemas.AnswerResponse, tags=["teams"])
    async def answer(team: Team, body: schemas.AnswerRequest, service: ServiceDep, access: AccessDep,
                     token: Token) -> schemas.AnswerResponse:
        """Answer from the team's conflict-free evidence; lists what was dropped and why."""
        access.require_team(_token(token), team)
        return await asyncio.to_thread(service.answer, team, body)

    @api.post("/v1/chat/completions", tags=["llm"])
    async def chat_completions(body: schemas.ChatCompletionRequest, request: Request, access: AccessDep,
                               token: Token) -> Any:
        """OpenAI-compatible chat with the served LLM (vLLM on the cluster, streaming there)."""
        access.require_any(_token(token))
        service: Service = request.app.state.service
        body = body.model_copy(update={"max_tokens": caps.chat_tokens(service.serving, body.max_tokens)})
        await asyncio.to_thread(_check_prompt, service, body)
        return await request.app.state.chat(body)

    api.include_router(reads.router)  # read-only views of graphs and banks, for the web page
    mcp_http.mount(api, lambda team: _writer(api, team))  # the same tools for agents, at /mcp
    webpage.mount(api)  # the web page, at /ui
    return api


def _check_prompt(service: Service, body: schemas.ChatCompletionRequest) -> None:
    """Refuse a prompt over the model's context less max_tokens (in a thread: the tokenizer may load first)."""
    from memgraft.models.llm.tokens import token_counter

    context = getattr(service.models.llm, "context_tokens", None)
    if context is None:
        return
    counter = token_counter(service.settings.models.llm, str(service.settings.cache_path))
    caps.check_prompt(counter, [(m.role, m.content) for m in body.messages], body.max_tokens or 0, context)


def _writer(api: FastAPI, team: str) -> asyncio.Lock:
    """One team's write turn on this replica's event loop."""
    locks: dict[str, asyncio.Lock] = api.state.writers
    return locks.setdefault(team, asyncio.Lock())


def local_chat(service: Service) -> Chat:
    """The chat endpoint on the in-process LLM deployment."""

    async def run(body: schemas.ChatCompletionRequest) -> schemas.ChatCompletionResponse:
        return await asyncio.to_thread(chat.complete, service.models.llm, body)

    return run


def serve_state(api: FastAPI, service: Service, access: Access, chat_fn: Chat | None = None) -> FastAPI:
    """Fill in what the routes read."""
    api.state.service = service
    api.state.access = access
    api.state.chat = chat_fn or local_chat(service)
    api.state.max_body_bytes = service.serving.max_body_bytes
    return api
