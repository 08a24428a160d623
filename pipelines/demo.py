"""`make demo`: index the MuSiQue passages on a local Ray, show retrieval for one
question, then answer a few questions with HGMem on the bundled SmolLM2 and print
each answer with its final memory.

Reruns are incremental: the graph folder is appended to (unchanged passages are
not processed again) and questions already answered are not asked again.
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
from pipelines.answer_queries import run_answers
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


def show_answer(row: dict) -> None:
    from memgraft.hgmem.memory import HypergraphMemory

    console.rule(f"[bold]{row['id']}")
    console.print(f"[bold]Q:[/] {row['question']}")
    if row.get("error"):
        console.print(f"[red]failed:[/] {row['error']}")
        return
    console.print(f"[bold]A:[/] {row['answer']}    [dim](reference: {row.get('gold_answer')})[/]")
    console.print(f"[dim]{row['steps']} steps, {row['llm_calls']} LLM calls, {row['prompt_tokens']}+"
                  f"{row['completion_tokens']} tokens, {row['seconds']:.0f} s; trace {row['trace']} (and .html)[/]")
    trace = json.loads(Path(row["trace"]).read_text())
    memory = HypergraphMemory.from_dict(trace["final_memory"])
    table = Table(title="final memory", show_lines=True)
    for col in ("point", "description", "entities", "sources"):
        table.add_column(col)
    for p in memory.active_points():
        names = ", ".join(v.name + ("" if v.in_graph else " (not in graph)") for v in memory.vertices_of(p.point_id))
        extra = f" (merged from {', '.join(p.merged_from)})" if p.merged_from else ""
        table.add_row(p.point_id + extra, p.description, names, f"{len(p.chunk_ids)} chunks")
    console.print(table if memory.active_points() else "[dim](memory stayed empty)[/]")


def main(
    corpus: str = typer.Option(..., help="documents to index"),
    questions: str = typer.Option(None, help="MuSiQue-style questions JSON"),
    output: str = typer.Option("out/demo-graph", help="graph folder"),
    answers: str = typer.Option("out/demo-answers", help="answers folder"),
    ask: int = typer.Option(3, help="how many questions HGMem answers"),
    method: str = typer.Option("hgmem"),
    profile: str = typer.Option("local"),
) -> None:
    logging.basicConfig(level=logging.WARNING)
    settings = load_settings(profile)
    report = run_build(settings, corpus, output, append=True)
    print_summary(report)
    if not questions:
        return
    first = json.loads(Path(questions).read_text())[0]["question"]
    store = GraphStore.load(output, load_embedder(settings))
    show_retrieval(store, first)
    console.print(f"\nAnswering {ask} questions with {method} on {settings.models.llm} (CPU: about a minute each)…")
    summary = run_answers(settings, output, questions, answers, method, limit=ask)
    console.print(summary)
    rows = [json.loads(line) for line in (Path(answers) / "answers.jsonl").read_text().splitlines()]
    for row in rows[:ask]:
        show_answer(row)


if __name__ == "__main__":
    typer.run(main)
