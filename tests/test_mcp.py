"""The MCP server driven by the SDK's own client, over both transports.

HTTP: the FastAPI app the ingress builds, on in-process doubles, served by
uvicorn on a free port (:mod:`tests.served_app`, which test_ui shares): the tools and resources with the REST tokens, and a team token refused on
another team. Stdio: ``python -m serving.mcp --bank B`` as a subprocess on a bank
of a generated stream, with the real embedded embedder and, as its LLM, an
OpenAI-compatible double on a local port (``models.llm_backend=openai``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memgraft.collab.data.generator import generate
from tests.collab_banks import bank_from_gold
from tests.facts_world import FACTS
from tests.served_app import LAB, OPS, READ, group, served, served_app, write_graph

REPO = Path(__file__).resolve().parent.parent
TOOLS = {"search_memories", "add_memory_group", "answer_from_memories", "memory_history", "query_graph", "get_trace"}
TEMPLATES = {"memgraft://teams/{team}/memories", "memgraft://graphs/{graph}/manifest"}


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def refused(result) -> str:
    """A tool error's own text, after the SDK's "Error executing tool <name>: " prefix."""
    assert result.is_error, text_of(result)
    return text_of(result).split(": ", 1)[1]


@pytest.fixture(scope="module")
def http_url(tmp_path_factory):
    """The ingress's app (REST and MCP at /mcp) on in-process doubles: its MCP URL."""
    with served_app(tmp_path_factory.mktemp("mcp-http")) as (url, _):
        yield f"{url}/mcp"


@asynccontextmanager
async def over_http(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``headers`` (the bearer token) with every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def query_trace_and_manifest(client: Client, out: dict, question: str, **method: str) -> None:
    """``query_graph`` on the facts graph (its default method unless ``method=`` names one), then ``get_trace``
    of its trace and the graph's manifest, into ``out``."""
    out["query"] = await client.call_tool("query_graph", {"graph": "facts", **method, "question": question})
    trace_id = (out["query"].structured_content or {}).get("trace_id", "none")
    out["trace"] = await client.call_tool("get_trace", {"trace_id": trace_id})
    out["manifest"] = await client.read_resource("memgraft://graphs/facts/manifest")


def test_http_lists_typed_tools_and_resource_templates(http_url):
    async def run():
        async with over_http(http_url, LAB) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            return tools, templates

    tools, templates = asyncio.run(run())
    assert set(tools) == TOOLS and templates == TEMPLATES
    search = tools["search_memories"].input_schema
    assert search["required"] == ["team", "query"] and search["properties"]["k"]["minimum"] == 1
    assert "pattern" in search["properties"]["team"]
    group_schema = json.dumps(tools["add_memory_group"].input_schema)
    assert "memory_id" in group_schema and "individual" in group_schema  # the REST body's own model
    assert "hgmem" in json.dumps(tools["query_graph"].input_schema["properties"]["method"])
    assert all(len(t.description) > 60 and "\n " not in t.description for t in tools.values())
    assert [n for n, t in sorted(tools.items()) if not t.annotations.read_only_hint] == ["add_memory_group"]
    assert tools["search_memories"].output_schema["title"] == "SearchResponse"


def test_http_calls_every_tool_and_reads_both_resources(http_url):
    async def run():
        out = {}
        async with over_http(http_url, LAB) as lab:
            out["g1"] = await lab.call_tool("add_memory_group", {"team": "lab", "group": group(
                "lab", "g1", 6, "Deploys happen on Mondays.")})
            out["g2"] = await lab.call_tool("add_memory_group", {"team": "lab", "group": group(
                "lab", "g2", 7, "From now on deploys happen on Tuesdays, not Mondays.",
                "I deployed on Monday as usual.")})
            out["search"] = await lab.call_tool("search_memories", {"team": "lab", "query": "when do deploys happen",
                                                                     "k": 5})
            out["past"] = await lab.call_tool("search_memories", {"team": "lab", "query": "deploys",
                                                                   "as_of": "2025-01-06T12:00:00"})
            out["answer"] = await lab.call_tool("answer_from_memories", {"team": "lab",
                                                                          "question": "When do deploys happen?"})
            out["history"] = await lab.call_tool("memory_history", {"team": "lab", "memory_id": "g2-m1"})
            out["over_k"] = await lab.call_tool("search_memories", {"team": "lab", "query": "deploys", "k": 21})
            out["memories"] = await lab.read_resource("memgraft://teams/lab/memories")
        async with over_http(http_url, READ) as reader:
            await query_trace_and_manifest(reader, out, "Who did Ada Lovelace work with?")
            out["no_graph"] = await reader.call_tool("query_graph", {"graph": "nope", "question": "q"})
        return out

    out = asyncio.run(run())
    assert not out["g1"].is_error and not out["g2"].is_error, text_of(out["g2"])
    g2 = out["g2"].structured_content
    assert g2["group_id"] == "g2" and {d["memory_id"] for d in g2["decisions"]} >= {"g2-m1"}
    hits = out["search"].structured_content["hits"]
    assert "From now on deploys happen on Tuesdays, not Mondays." in [h["memory"]["original"] for h in hits]
    assert [h["memory"]["memory_id"] for h in out["past"].structured_content["hits"]] == ["g1-m0"]
    assert out["answer"].structured_content["answer"] == "Deploys happen on Tuesdays."
    history = out["history"].structured_content
    assert history["memory"]["memory_id"] == "g2-m1" and history["decisions"][0]["group_id"] == "g2"
    assert refused(out["over_k"]).startswith("422 OverLimit: k is at most 20")
    memories = json.loads(out["memories"].contents[0].text)
    assert [m["memory_id"] for m in memories["memories"]] == ["g1-m0", "g2-m0", "g2-m1"]
    assert not out["query"].is_error, text_of(out["query"])
    query = out["query"].structured_content
    assert query["answer"] == "scripted answer" and query["graph"] == "facts" and query["llm_calls"] == 8
    trace = out["trace"].structured_content
    assert trace["question"] == "Who did Ada Lovelace work with?", trace.keys()
    assert [s["operations"]["inserts"] for s in trace["steps"]] == [["p1"], ["p2"], ["p4"]]  # the scripted path
    assert json.loads(out["manifest"].contents[0].text)["counts"]["chunks"] == len(FACTS)
    assert refused(out["no_graph"]).startswith("404 NotFound: no graph 'nope'")


def test_http_team_token_never_reaches_another_team(http_url):
    secret = "The ops pager code is 7431."

    async def run():
        out = {}
        async with over_http(http_url, OPS) as ops:
            out["own"] = await ops.call_tool("add_memory_group", {"team": "ops", "group": group("ops", "o1", 6, secret)})
        async with over_http(http_url, LAB) as lab:
            out["search"] = await lab.call_tool("search_memories", {"team": "ops", "query": "pager code"})
            out["write"] = await lab.call_tool("add_memory_group", {"team": "ops", "group": group(
                "ops", "o2", 7, "Written by lab.")})
            out["history"] = await lab.call_tool("memory_history", {"team": "ops", "memory_id": "o1-m0"})
            out["graph"] = await lab.call_tool("query_graph", {"graph": "facts", "question": "q"})
            try:
                await lab.read_resource("memgraft://teams/ops/memories")
                out["resource"] = "read"
            except MCPError as err:
                out["resource"] = str(err)
        async with over_http(http_url, OPS) as ops:
            out["after"] = await ops.read_resource("memgraft://teams/ops/memories")
        return out

    out = asyncio.run(run())
    assert not out["own"].is_error, text_of(out["own"])
    for name in ("search", "write", "history"):
        assert refused(out[name]) == "403 Forbidden: this token does not reach team 'ops'", name
        assert secret not in text_of(out[name])
    assert refused(out["graph"]).startswith("403 Forbidden: graphs are read with a reader")
    assert "403 Forbidden: this token does not reach team 'ops'" in out["resource"]
    assert [m["memory_id"] for m in json.loads(out["after"].contents[0].text)["memories"]] == ["o1-m0"]  # no o2

    # no token, or an unknown one, is REST's 401 at the door, before MCP reads the request
    for headers in ({}, {"Authorization": "Bearer tok-nobody-01"}):
        answer = httpx.post(http_url, headers={**headers, "Accept": "application/json, text/event-stream"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401 and answer.headers["WWW-Authenticate"] == "Bearer"


# -- stdio ----------------------------------------------------------------------------------------

ANSWERS = {"Answer": "Charles Babbage designed it.", "CollabAnswer": "The team meets on Fridays."}


def openai_double() -> FastAPI:
    """An OpenAI-compatible chat server that answers by the requested schema: the stdio server's LLM here
    (SmolLM2 on 2 shared cores takes minutes per structured answer)."""
    app = FastAPI()
    app.state.titles = []

    @app.post("/v1/chat/completions")
    async def chat(body: dict) -> dict:
        title = body["response_format"]["json_schema"]["schema"]["title"]
        app.state.titles.append(title)
        return {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": json.dumps({"answer": ANSWERS[title]})}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    return app


@pytest.fixture(scope="module")
def local_bank(tmp_path_factory, embedder):
    """A bank of a generated two-team stream (gold decisions applied), and a graph beside it."""
    root = tmp_path_factory.mktemp("mcp-stdio")
    data = generate(seed=3, teams=2, groups=3)
    bank_from_gold(data, root / "bank.sqlite", embedder).close()
    write_graph(root / "graphs" / "facts", embedder)
    return root, data


def test_stdio_serves_a_local_bank_to_the_sdk_client(local_bank):
    root, data = local_bank
    team = data.groups[0]["team"]
    other = next(g["team"] for g in data.groups if g["team"] != team)
    target = data.groups[0]["memories"][0]
    revised = next(d for d in data.gold if d["team"] == team and d["action"] == "revise")
    last_day = max(g["time"] for g in data.groups if g["team"] == team)[:10]
    new = {"team": team, "group_id": "mcp-g1", "time": f"{last_day}T23:00:00", "memories": [
        {"memory_id": "mcp-m1", "type": "team", "author": "desk", "content": "The team meets on Fridays now."}]}
    llm = openai_double()

    async def run(url):
        params = StdioServerParameters(
            command=sys.executable, cwd=str(REPO), env=dict(os.environ),
            args=["-m", "serving.mcp", "--bank", str(root / "bank.sqlite"), "--graphs", str(root / "graphs"),
                  "--set", "models.llm_backend=openai", "--set", f"models.llm_base_url={url}/v1"])
        out = {}
        async with Client(params, read_timeout_seconds=300) as client:
            out["tools"] = {t.name for t in (await client.list_tools()).tools}
            out["search"] = await client.call_tool("search_memories", {"team": team, "query": target["content"],
                                                                        "k": 3})
            out["add"] = await client.call_tool("add_memory_group", {"team": team, "group": new})
            out["history"] = await client.call_tool("memory_history", {"team": team,
                                                                        "memory_id": revised["memory_id"]})
            out["memories"] = await client.read_resource(f"memgraft://teams/{other}/memories")
            out["answer"] = await client.call_tool("answer_from_memories", {"team": team,
                                                                             "question": "When does the team meet?"})
            await query_trace_and_manifest(client, out, "Who designed the Analytical Engine?", method="naive")
            out["missing"] = await client.call_tool("search_memories", {"team": "nobody", "query": "x"})
        return out

    with served(llm) as url:
        out = asyncio.run(run(url))
    assert out["tools"] == TOOLS
    hits = out["search"].structured_content["hits"]
    assert hits[0]["memory"]["memory_id"] == target["memory_id"] and hits[0]["memory"]["original"] == target["content"]
    assert not out["add"].is_error, text_of(out["add"])
    assert out["add"].structured_content["group_id"] == "mcp-g1"
    history = out["history"].structured_content
    assert history["memory"]["memory_id"] == revised["memory_id"]
    assert history["memory"]["maintained"] == revised["maintained"] != history["memory"]["original"]
    assert revised["group_id"] in [d["group_id"] for d in history["decisions"] if d["action"] == "revise"]
    theirs = json.loads(out["memories"].contents[0].text)
    assert theirs["team"] == other and [m["memory_id"] for m in theirs["memories"]] == [
        m["memory_id"] for g in data.groups if g["team"] == other for m in g["memories"]]
    assert not out["answer"].is_error, text_of(out["answer"])
    answer = out["answer"].structured_content
    assert answer["answer"] == ANSWERS["CollabAnswer"] and "mcp-m1" in [m["memory_id"] for m in answer["evidence"]]
    assert not out["query"].is_error, text_of(out["query"])
    assert out["query"].structured_content["answer"] == ANSWERS["Answer"]
    assert out["trace"].structured_content["question"] == "Who designed the Analytical Engine?"
    assert json.loads(out["manifest"].contents[0].text)["counts"]["relations"] == len(FACTS)
    assert refused(out["missing"]).startswith("404 NotFound: team 'nobody'")
    assert llm.state.titles == ["CollabAnswer", "Answer"]
