"""Read-only GET routes the web page browses with: graphs, entities, chunks, a bank as of a time, a history.

Each checks the token as the REST routes do (:mod:`serving.access`): a reader
token reads graphs, a team token reads only its own team's bank. They return the
same bodies as the MCP resources and tools over the same :class:`Service`
methods, so the page, an agent and a script see one memory.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from serving import explore, schemas
from serving.deps import AccessDep, Graph, ServiceDep, Team, Token, token_of

router = APIRouter()
Text = Annotated[str, Query(min_length=1, max_length=4000)]


@router.get("/v1/whoami", response_model=schemas.WhoAmI, tags=["service"])
async def whoami(access: AccessDep, token: Token) -> schemas.WhoAmI:
    """The team this token reaches, and whether it reads graphs (401 for an unknown token)."""
    raw = token_of(token)
    access.require_any(raw)
    return schemas.WhoAmI(team=access.team_of(raw), reader=access.is_reader(raw))


@router.get("/v1/graphs", response_model=schemas.GraphsResponse, tags=["graphs"])
async def graphs(service: ServiceDep, access: AccessDep, token: Token) -> schemas.GraphsResponse:
    """The graphs this service answers over, with their counts (read from manifests, nothing loaded)."""
    access.require_reader(token_of(token))
    return await asyncio.to_thread(explore.graphs, service)


@router.get("/v1/graphs/{graph}/manifest", tags=["graphs"])
async def manifest(graph: Graph, service: ServiceDep, access: AccessDep, token: Token) -> dict[str, Any]:
    """A graph's manifest.json: counts, models, index kinds and build settings."""
    access.require_reader(token_of(token))
    return await asyncio.to_thread(service.manifest, graph)


@router.get("/v1/graphs/{graph}/entities", response_model=schemas.EntitySearchResponse, tags=["graphs"])
async def entities(graph: Graph, q: Text, service: ServiceDep, access: AccessDep, token: Token,
                   k: Annotated[int, Query(ge=1)] = 10) -> schemas.EntitySearchResponse:
    """Entities nearest to ``q`` by their embedded names (at most serving.max_k)."""
    access.require_reader(token_of(token))
    return await asyncio.to_thread(explore.search_entities, service, graph, q, k)


@router.get("/v1/graphs/{graph}/entities/{entity_id}", response_model=schemas.EntityView, tags=["graphs"])
async def entity(graph: Graph, entity_id: Annotated[str, Path(min_length=1, max_length=200)], service: ServiceDep,
                 access: AccessDep, token: Token) -> schemas.EntityView:
    """An entity, its relations and neighbours one hop away, and its source chunks."""
    access.require_reader(token_of(token))
    return await asyncio.to_thread(explore.entity, service, graph, entity_id)


@router.get("/v1/graphs/{graph}/chunks", response_model=schemas.ChunksResponse, tags=["graphs"])
async def chunks(graph: Graph, service: ServiceDep, access: AccessDep, token: Token,
                 ids: Annotated[list[str], Query(description="chunk ids, repeated")] = []) -> schemas.ChunksResponse:
    """Chunk texts by id (a trace's evidence and the chunks an answer used)."""
    access.require_reader(token_of(token))
    return await asyncio.to_thread(explore.chunks, service, graph, ids)


@router.get("/v1/teams/{team}/memories", response_model=schemas.MemoriesResponse, tags=["teams"])
async def memories(team: Team, service: ServiceDep, access: AccessDep, token: Token,
                   as_of: Annotated[datetime | None, Query(description="the bank as it stood then")] = None
                   ) -> schemas.MemoriesResponse:
    """The team's memories now, or rebuilt as of a time, with both texts and validity."""
    access.require_team(token_of(token), team)
    if as_of is not None:
        as_of = schemas.TimeAdapter.validate_python(as_of)
    return await asyncio.to_thread(service.memories, team, as_of)


@router.get("/v1/teams/{team}/history", response_model=schemas.HistoryResponse, tags=["teams"])
async def history(team: Team, memory_id: Annotated[str, Query(min_length=1, max_length=200)], service: ServiceDep,
                  access: AccessDep, token: Token) -> schemas.HistoryResponse:
    """One memory as it stands and every maintenance decision on it, oldest first."""
    access.require_team(token_of(token), team)
    return await asyncio.to_thread(service.history, team, memory_id)
