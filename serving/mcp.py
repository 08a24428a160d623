"""memgraft over MCP: the library's tools and resources for an agent, on the REST API's service and schemas.

Two ways in. Over HTTP the server is mounted in the Serve ingress at ``/mcp``
(streamable HTTP, see :mod:`serving.mcp_http`): every request carries the same
bearer token as REST, and each tool checks it exactly as the REST route does, so a
team token reaches only its team and graphs need a reader token. Over stdio,
``python -m serving.mcp --bank B`` serves one local SQLite bank to a desktop client
with the embedded default models (see :mod:`serving.mcp_local`); there are no
tokens there: the local user owns the bank and every team in it.

The tools call the :class:`~serving.service.Service` methods the REST routes call
and return the REST response models, so limits, team isolation and error
messages are the REST API's own. A refusal is a tool error whose text starts with
the status REST would answer (``403 Forbidden: this token does not reach team
'ops'``), so an agent can tell "not yours" from "not there" from "too big".
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import sys
from contextlib import AbstractAsyncContextManager, contextmanager, redirect_stdout
from datetime import datetime
from typing import Annotated, Any, Callable, Iterator, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from serving import errors, schemas
from serving.budget import Budget
from serving.mcp_strict import strict_tool
from serving.names import NAME, TRACE
from serving.service import Service

Team = Annotated[str, Field(pattern=NAME.pattern, description="the team whose memories to use")]
Graph = Annotated[str, Field(pattern=NAME.pattern, description="a graph's name (its folder under graphs_dir)")]
Query = Annotated[str, Field(min_length=1, max_length=4000)]
K = Annotated[int, Field(ge=1, description="how many memories to return (at most the server's serving.max_k)")]
AsOf = Annotated[datetime | None, Field(description="ISO time: use the memories as they stood then (default: now)")]

INSTRUCTIONS = """memgraft is memory for agents. A team's memories are time-stamped team decisions and individual
notes; newer team decisions revise or invalidate older notes, and every such decision is logged. Use
search_memories or answer_from_memories before acting on what a team decided; add what the team decides
with add_memory_group; use memory_history to see why a memory changed. Graphs are document collections
you ask with query_graph; get_trace shows how an answer was reached."""


class Gate(Protocol):
    """Who may do what, for one transport: tokens over HTTP, the bank's owner over stdio."""

    @property
    def service(self) -> Service: ...

    def team(self, ctx: Context, team: str) -> None: ...

    def reader(self, ctx: Context) -> None: ...

    def write_turn(self, team: str) -> AbstractAsyncContextManager[Any]: ...


def refusal(exc: BaseException) -> str | None:
    """``"<status> <error>: <message>"`` for what REST answers with a 4xx/5xx; None for a bug."""
    for kind in type(exc).__mro__:
        if kind in errors.STATUS:
            detail = str(exc) or type(exc).__name__
            if isinstance(exc, ValidationError):  # as REST's 422: each field and why, never the input itself
                detail = errors.validation_message(exc)
            return f"{errors.STATUS[kind]} {type(exc).__name__}: {errors.scrub(detail)}"
    if "ray" in sys.modules and isinstance(exc, errors._unavailable()):  # only the ingress has Ray
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"503 {type(exc).__name__}: {errors.scrub(first)} (retry: Serve is replacing the replica)"
    return None


@contextmanager
def _as(error: type[Exception]) -> Iterator[None]:
    try:
        yield
    except (ToolError, ResourceError):
        raise
    except Exception as exc:
        text = refusal(exc)
        if text is None:
            raise
        raise error(text) from exc


def build_server(gate: Gate, name: str = "memgraft") -> MCPServer:
    tools: list[Tool] = []  # strict (serving.mcp_strict), so the server is built once they are all defined

    async def run(fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)  # the library blocks: keep the event loop answering

    def tool(read_only: bool = True) -> Callable[[Callable[..., Any]], Any]:
        def register(fn: Callable[..., Any]) -> Any:
            hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=False, idempotent_hint=True)
            tools.append(strict_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints))
            return fn
        return register

    @tool()
    async def search_memories(team: Team, query: Query, ctx: Context, k: K = 10, as_of: AsOf = None
                              ) -> schemas.SearchResponse:
        """Rank a team's memories for a query, preferring ones still valid (dense + semantic + validity).

        Each hit has both texts: `original` as written, `maintained` as later decisions left it, and
        `valid` (false: superseded). Pass `as_of` to see what the team knew at a past time."""
        with _as(ToolError):
            gate.team(ctx, team)
            return await run(gate.service.search, team, schemas.SearchRequest(query=query, k=k, as_of=as_of))

    @tool(read_only=False)  # idempotent: a group sent twice is refused (409), never applied twice
    async def add_memory_group(team: Team, group: schemas.GroupRequest, ctx: Context) -> schemas.GroupResponse:
        """Add one time-aligned group of memories (what a team wrote at one time) and maintain the old ones.

        `group.team` must equal `team`; groups must arrive in time order, each `group_id` once. Team
        memories (decisions, protocols) outrank individual ones: the updater revises or invalidates
        earlier memories they contradict, and the result lists every decision it made."""
        with _as(ToolError):
            gate.team(ctx, team)
            async with gate.write_turn(team):
                budget = Budget(gate.service.serving.write_timeout_s)
                try:
                    return await run(gate.service.add_group, team, group, budget)
                except asyncio.CancelledError:  # the agent's call was cancelled: the write stops uncommitted
                    budget.cancelled.set()
                    raise

    @tool()
    async def answer_from_memories(team: Team, question: Query, ctx: Context, as_of: AsOf = None
                                   ) -> schemas.AnswerResponse:
        """Answer a question from a team's memories, after dropping the losing side of every contradiction.

        Returns the answer, the evidence it used and what was dropped and why; `as_of` answers as of
        a past time."""
        with _as(ToolError):
            gate.team(ctx, team)
            return await run(gate.service.answer, team, schemas.AnswerRequest(question=question, as_of=as_of))

    @tool()
    async def memory_history(team: Team, memory_id: Annotated[str, Field(min_length=1, max_length=200)],
                             ctx: Context) -> schemas.HistoryResponse:
        """One memory now, and every maintenance decision on it in order: why and when its text or
        validity changed, which group caused it, and who decided (a rule, the pair judge or an LLM)."""
        with _as(ToolError):
            gate.team(ctx, team)
            return await run(gate.service.history, team, memory_id)

    @tool()
    async def query_graph(graph: Graph, question: Query, ctx: Context,
                          method: schemas.Method = "hgmem") -> schemas.QueryResponse:  # type: ignore[valid-type]
        """Answer a question over a document graph. `hgmem` (default) builds a hypergraph working memory
        over several retrieval steps, for questions that combine facts; `naive` is one retrieval.

        Returns the answer, its cost, and a `trace_id` for get_trace. Slow: one LLM call per step."""
        with _as(ToolError):
            gate.reader(ctx)
            return await run(gate.service.query, graph, schemas.QueryRequest(question=question, method=method))

    @tool()
    async def get_trace(trace_id: Annotated[str, Field(pattern=TRACE.pattern)], ctx: Context) -> dict[str, Any]:
        """The step-by-step trace of a query_graph answer (subqueries, evidence, memory per step, tokens)."""
        with _as(ToolError):
            gate.reader(ctx)
            return await run(gate.service.trace, trace_id)

    server = MCPServer(name, instructions=INSTRUCTIONS, version="0.1.0", tools=tools)

    @server.resource("memgraft://teams/{team}/memories", mime_type="application/json")
    async def team_memories(team: str, ctx: Context) -> str:
        """A team's current memories in write order, each with type, both texts and validity."""
        with _as(ResourceError):
            gate.team(ctx, team)
            return (await run(gate.service.memories, team)).model_dump_json()

    @server.resource("memgraft://graphs/{graph}/manifest", mime_type="application/json")
    async def graph_manifest(graph: str, ctx: Context) -> str:
        """A graph's manifest: counts of documents, chunks, entities and relations, models, build settings."""
        with _as(ResourceError):
            gate.reader(ctx)
            return json.dumps(await run(gate.service.manifest, graph))

    return server


def main(argv: list[str] | None = None) -> int:
    """``python -m serving.mcp --bank B``: serve a local bank over stdio (no tokens: the local user owns it)."""
    p = argparse.ArgumentParser(prog="python -m serving.mcp", description=main.__doc__)
    p.add_argument("--bank", required=True, help="the SQLite bank (created on the first group added)")
    p.add_argument("--graphs", help="a folder of graph folders, for query_graph")
    p.add_argument("--traces", help="where query traces go (default: a 'traces' folder beside the bank)")
    p.add_argument("--profile", default="local", help="a profile name or YAML path (default: local)")
    p.add_argument("--set", action="append", default=[], help="section.field=value")
    a = p.parse_args(argv)
    from serving.mcp_local import local_gate

    with redirect_stdout(sys.stderr):  # stdout is the client's wire: a stray print while loading would garble it
        gate = local_gate(a.bank, graphs=a.graphs, traces=a.traces, profile=a.profile, overrides=a.set)
    try:
        build_server(gate).run("stdio")
    finally:
        gate.service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
