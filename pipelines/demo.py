"""`make demo`: index a slice of the MuSiQue passages on a local Ray, show retrieval
for one question, then answer a few questions with HGMem on the bundled SmolLM2,
print each answer with its final memory, and end with a table of what each part
did and how long it took.

The slice (``--passages``, default 200; 0 indexes all 1,890) keeps the demo under
10 minutes on 2 cores: MuSiQue's corpus lists each question's 20 passages together,
so the first 200 hold the first 10 questions' passages, the ones the demo asks.
The whole corpus is ``make bench``'s (about 100k entity and relation texts to embed).

Reruns are incremental: the graph folder is appended to (unchanged passages are
not processed again) and questions already answered are not asked again.
"""

from __future__ import annotations

import json
import os
import sys
import time
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
from pipelines.build_graphs import BuildReport, print_summary, run_build
from pipelines.runtime import configure_output

console = Console()
DEMO_PASSAGES = 200
BUILD_PARTS = {"read": "read (with Ray's start-up)", "chunk_extract_embed": "chunk, extract, embed chunks (Ray Data)",
               "merge": "merge into one graph", "embed_graph": "embed entities and relations",
               "index": "FAISS indexes", "write": "write the graph folder"}


def corpus_slice(corpus: str, passages: int, folder: Path) -> tuple[str, str]:
    """The first ``passages`` documents of a JSON-list corpus as ``folder/demo-corpus.json``, and what was kept.

    The file name stays the same for any slice (doc ids come from titles): a larger slice appends to the graph.
    """
    docs = json.loads(Path(corpus).read_text()) if corpus.endswith(".json") else None
    if not passages or not isinstance(docs, list) or passages >= len(docs):
        return corpus, f"all of {corpus}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "demo-corpus.json"
    path.write_text(json.dumps(docs[:passages], ensure_ascii=False))
    return str(path), f"first {passages:,} of {len(docs):,} passages (--passages; 0: all)"


def build_rows(report: BuildReport) -> list[tuple[str, float, str]]:
    """The build's parts as (part, seconds, what) rows."""
    c, t = report.counts, report.timings
    what = {"read": f"{report.processed_docs:,} documents to process",
            "chunk_extract_embed": f"{report.new_chunks:,} chunks, {report.new_tokens:,} tokens",
            "merge": f"{c['entities']:,} entities, {c['relations']:,} relations",
            "embed_graph": "new and changed entity and relation texts", "index": "chunks, entities, relations",
            "write": report.output}
    rows = [(BUILD_PARTS[k], t[k], what[k]) for k in BUILD_PARTS if k in t]
    rest = t.get("total", 0.0) - sum(t.get(k, 0.0) for k in BUILD_PARTS if k != "write")
    return rows + [("build: model loads and the rest", max(0.0, rest), "embedder dimension, plan, documents table")]


def show_timings(rows: list[tuple[str, float, str]], started: float) -> None:
    table = Table(title="what the demo did")
    for col, justify in (("part", "left"), ("seconds", "right"), ("what", "left")):
        table.add_column(col, justify=justify)
    for part, seconds, what in rows:
        table.add_row(part, f"{seconds:.1f}", what)
    table.add_row("[bold]total", f"[bold]{time.perf_counter() - started:.1f}", "")
    console.print(table)


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


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
    # every vertex is a graph entity and every point cites the chunks it came from (the loop checks both each
    # round: HypergraphMemory.check_grounded), so the table says what each point rests on
    for p in memory.active_points():
        names = ", ".join(v.name for v in memory.vertices_of(p.point_id))
        extra = f" (merged from {', '.join(p.merged_from)})" if p.merged_from else ""
        sources = _count(len(p.chunk_ids), "chunk") + (f", {_count(len(p.relation_ids), 'relation')}" if p.relation_ids else "")
        table.add_row(p.point_id + extra, p.description, names, sources)
    console.print(table if memory.active_points() else "[dim](memory stayed empty)[/]")


def main(
    corpus: str = typer.Option(..., help="documents to index"),
    questions: str = typer.Option(None, help="MuSiQue-style questions JSON"),
    output: str = typer.Option("out/demo-graph", help="graph folder"),
    answers: str = typer.Option("out/demo-answers", help="answers folder"),
    ask: int = typer.Option(3, help="how many questions HGMem answers"),
    passages: int = typer.Option(DEMO_PASSAGES, help="index the corpus's first N passages (0: all of them)"),
    method: str = typer.Option("hgmem"),
    profile: str = typer.Option("local"),
    verbose: bool = typer.Option(False, "--verbose", help="Ray's, Ray Data's and the models' own INFO logs too"),
) -> None:
    configure_output(verbose)
    # Ray starts its workers at niceness 15, so on a shared machine anyone's job starves the demo's LLM actor
    # (on 2 cores loaded to 5-20, one round of SmolLM2 took 62-705 s): the demo is the foreground job
    os.environ.setdefault("RAY_worker_niceness", "0")
    started = time.perf_counter()
    settings = load_settings(profile)
    docs, kept = corpus_slice(corpus, passages, Path(output).parent)
    console.print(f"Indexing {kept} into {output}…")
    report = run_build(settings, docs, output, append=True)
    print_summary(report)
    parts = build_rows(report)
    if questions:
        t = time.perf_counter()
        first = json.loads(Path(questions).read_text())[0]["question"]
        store = GraphStore.load(output, load_embedder(settings))
        show_retrieval(store, first)
        parts.append(("retrieval for one question", time.perf_counter() - t, "load the graph, top entities and chunks"))
        console.print(f"\nAnswering {ask} question{'s' if ask != 1 else ''} with {method} on {settings.models.llm} "
                      f"({settings.hgmem.max_step + 1} rounds, each printed as it ends; under a minute a question "
                      f"on 2 quiet cores)…")
        t = time.perf_counter()
        summary = run_answers(settings, output, questions, answers, method, limit=ask)
        console.print(summary)
        rows = [json.loads(line) for line in (Path(answers) / "answers.jsonl").read_text().splitlines()]
        for row in rows[:ask]:
            show_answer(row)
        parts.append((f"answer with {method}", time.perf_counter() - t,
                      f"{summary['answered']} answered, {summary['failed']} failed, {summary['skipped']} answered before; "
                      f"LLM engine start included"))
        parts += [(f"  question {row['id'][:24]}", float(row.get("seconds") or 0.0),
                   f"{row.get('steps')} steps, {row.get('llm_calls')} LLM calls, {row.get('prompt_tokens')}+"
                   f"{row.get('completion_tokens')} tokens (the questions run at once)") for row in rows[:ask]]
    show_timings(parts, started)


if __name__ == "__main__":
    typer.run(main)
