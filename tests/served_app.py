"""The ingress's app served in-process for tests that drive it over HTTP (test_mcp, test_ui).

``served_app`` builds what the ingress replica builds (``create_api`` + ``serve_state``)
over in-process doubles: the hash embedder, HGMem's scripted LLM (plus a team
answer), the cosine reranker, the rules updater, and a ten-fact graph written as a
build writes one; uvicorn serves it on a free port in a thread.
"""

from __future__ import annotations

import json
import socket
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import uvicorn

from memgraft.config import load_settings
from memgraft.graph import vector_index
from memgraft.graph.folder import TABLES, GraphData, GraphFolder
from memgraft.models.llm.base import ChatRequest
from memgraft.models.reranker import CosineReranker
from serving.access import Access
from serving.api import create_api, serve_state
from serving.service import Models, Service
from serving.settings import load_profile
from tests.doubles import HashEmbedder, HGMemScript, ScriptedLLM
from tests.facts_world import fact_rows, fact_vectors

TOKENS = {"teams": {"lab": "tok-lab-0001", "ops": "tok-ops-0001"}, "readers": ["tok-read-0001"]}
LAB, OPS, READ = ({"Authorization": f"Bearer {t}"} for t in ("tok-lab-0001", "tok-ops-0001", "tok-read-0001"))

def write_graph(folder: Path, embedder) -> None:
    """A ten-fact graph folder (tests.facts_world, test_hgmem_loop's world), as a build writes one (the tables a query reads, vectors, flat indexes)."""
    rows = fact_rows()
    tables = {k: pa.Table.from_pylist(rows[k]) if k in rows else pa.table({"id": pa.array([], pa.string())})
              for k in TABLES}
    vectors = fact_vectors(rows, embedder)
    indexes = {}
    for kind, v in vectors.items():
        index = vector_index.faiss.IndexFlatIP(v.shape[1])
        index.add(np.ascontiguousarray(v, dtype=np.float32))
        indexes[kind] = vector_index.to_bytes(index)
    manifest = {"format": "memgraft-graph/1", "counts": {k: len(v) for k, v in rows.items()},
                "models": {"embedder": embedder.name, "dim": embedder.dim}}
    GraphFolder(str(folder)).write(GraphData(tables, vectors, manifest), indexes)


def group(team, gid, day, *texts):
    return {"team": team, "group_id": gid, "time": f"2025-01-{day:02d}T09:00:00",
            "memories": [{"memory_id": f"{gid}-m{i}", "type": "team" if i == 0 else "individual", "author": "ann",
                          "content": t} for i, t in enumerate(texts)]}


class Script(HGMemScript):
    """HGMem's scripted path, plus a team answer."""

    def __call__(self, request: ChatRequest) -> str:
        if (request.json_schema or {}).get("title") == "CollabAnswer":
            return json.dumps({"answer": "Deploys happen on Tuesdays."})
        return super().__call__(request)


@contextmanager
def served(app) -> Iterator[str]:
    """``app`` on uvicorn in a thread, on a free port: its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    pause = threading.Event()
    while thread.is_alive() and not server.started:
        pause.wait(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


@contextmanager
def served_app(root: Path) -> Iterator[tuple[str, Service]]:
    """The ingress's app (REST, MCP at /mcp, the page at /ui) over the doubles, with its tokens, graph
    ``facts``, banks and traces under ``root``: its base URL and service."""
    (root / "tokens.json").write_text(json.dumps(TOKENS))
    embedder = HashEmbedder()
    write_graph(root / "graphs" / "facts", embedder)
    # the rules judge both ways (the bundled pair judge reads MiniLM vectors); HGMem's scripted three steps
    s = load_settings("local", ["hicomer.updater_policy=rules", "hicomer.conflict_judge=rules", "hgmem.max_step=2",
                                "hgmem.top_entities=4", "hgmem.relations_per_entity=2", "hgmem.top_chunks=3",
                                "hgmem.max_chunks_per_step=5"])
    _, serving = load_profile("local", [f"serving.banks_dir={root / 'banks'}", f"serving.graphs_dir={root / 'graphs'}",
                                        f"serving.traces_dir={root / 'traces'}", "serving.max_k=20"])
    service = Service(s, serving, Models(llm=ScriptedLLM(Script()), embedder=embedder,
                                         reranker=CosineReranker(embedder)))
    try:
        with served(serve_state(create_api(), service, Access(str(root / "tokens.json")))) as url:
            yield url, service
    finally:
        service.close()
