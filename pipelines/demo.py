"""`make demo`: index the MuSiQue passages on a local Ray and show retrieval for one question.

Reruns are incremental: the graph folder is appended to, so unchanged passages
are not processed again.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import typer
from rich.console import Console
from rich.table import Table

from memgraft.config import load_settings
from memgraft.graph.store import GraphStore
from memgraft.models.embedder import load_embedder
from pipelines.build_graphs import print_summary, run_build

console = Console()


def show_retrieval(store: GraphStore, question: str, k_entities: int = 8, k_chunks: int = 5) -> None:
    console.rule(f"[bold]{question}")
    ents = Table(title="top entities", show_lines=False)
    for col in ("score", "entity", "type", "chunks", "strongest relation"):
        ents.add_column(col)
    for hit in store.search_entities(question, k_entities):
        e = store.entity(hit.id)
        rels = store.top_relations(hit.id, 1)
        rel = ""
        if rels:
            other = rels[0]["target_id"] if rels[0]["source_id"] == hit.id else rels[0]["source_id"]
            rel = f"-> {store.entity(other)['name']} (w={rels[0]['weight']:g})"
        ents.add_row(f"{hit.score:.3f}", e["name"], e["type"], str(len(e["chunk_ids"])), rel)
    console.print(ents)
    chunks = Table(title="top chunks", show_lines=True)
    for col in ("score", "doc_id", "text"):
        chunks.add_column(col)
    for hit in store.search_chunks(question, k_chunks):
        c = store.chunk(hit.id)
        chunks.add_row(f"{hit.score:.3f}", c["doc_id"], " ".join(c["text"].split())[:220] + "…")
    console.print(chunks)


def main(
    corpus: str = typer.Option(..., help="documents to index"),
    questions: str = typer.Option(None, help="MuSiQue-style questions JSON; the first is shown"),
    output: str = typer.Option("out/demo-graph", help="graph folder"),
    profile: str = typer.Option("local"),
    question: str = typer.Option(None, help="ask this instead of the first question in --questions"),
) -> None:
    logging.basicConfig(level=logging.WARNING)
    settings = load_settings(profile)
    report = run_build(settings, corpus, output, append=True)
    print_summary(report)
    if question is None and questions:
        question = json.loads(Path(questions).read_text())[0]["question"]
    if question:
        store = GraphStore.load(output, load_embedder(settings))
        show_retrieval(store, question)


if __name__ == "__main__":
    typer.run(main)
