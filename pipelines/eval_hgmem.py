"""The HGMem paper's tables in one run: every method, on the full graph and weaker ones, with one LLM.

    python pipelines/eval_hgmem.py --graph DIR --questions Q.jsonl --output OUT [--limit 20]
        [--drop 0.5] [--also openie=DIR_OPENIE] [--methods hgmem,naive,...] [--max-steps 0,3]

For each graph (the full one; a seeded copy with ``--drop`` of its entities and
relations removed, written under OUT; any ``--also NAME=DIR``, e.g. a graph built with
``extraction.method=openie``) it answers the questions with every method through the
driver (``pipelines/answer_queries.py``: resumable, one line per question) and prints
the score table: accuracy, passage recall, tokens, LLM calls and seconds per question
(Table 7) and the final memory's entities per point (Table 3), one table per graph
(Table 4). One LLM engine serves every run, so the rows compare methods, not models.
``--max-steps 0,3`` runs every method once per last step t (rows ``hgmem t=0``, ``hgmem t=3``).

MuSiQue rows also say how grounded the final memory is (``vertices_in_graph``: share of its vertices that
are graph entities; ``points_citing``: share of its points citing a chunk of the graph) and
``answer_recall@5``: the supporting passages among the first 5 passages the answer step was given. Beside
them, two rows without an LLM give the same recall@5 for the same questions: dense top-5 chunk search, and
graph top-5 (the ``hgmem.top_entities`` nearest entities' chunks ranked by the question).
The tables are printed and written to ``OUT/tables.json`` and ``OUT/tables.txt``.
MuSiQue-style questions (gold answers in the file) are scored here; for the datasets an
LLM judges, run ``python -m memgraft.eval score`` on the run folders.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import typer

from memgraft.config import Settings, load_settings
from memgraft.eval import report, scoring
from memgraft.graph.degrade import write_degraded
from memgraft.hgmem.methods import METHODS
from memgraft.models.llm.base import LLM
from pipelines.answer_queries import run_answers, start_llm
from pipelines.runtime import PipelineFitError, configure_output, init_ray


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name)


def with_max_step(settings: Settings, max_step: int) -> Settings:
    return settings.model_copy(update={"hgmem": settings.hgmem.model_copy(update={"max_step": max_step})})


def retrieval_rows(settings: Settings, graph: str, questions: str, limit: int | None = None,
                   k: int = scoring.ANSWER_K, ids: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """Recall@k of the supporting passages by dense chunk search and by graph retrieval (no LLM), for the
    questions of ``questions`` (the first ``limit``; with ``ids``, those of them) that name their supporting
    passages."""
    from memgraft.eval import musique
    from memgraft.graph.store import GraphStore
    from memgraft.models.embedder import load_embedder
    from pipelines.answer_queries import read_questions

    rows = [q for q in read_questions(questions)][: limit if limit else None]
    rows = [q for q in rows if ids is None or str(q["id"]) in ids]
    rows = [q for q in rows if q.get("supporting_doc_ids")]
    if not rows:
        return {}
    store = GraphStore.load(graph, load_embedder(settings))
    vecs = store.embedder.encode([str(q["question"]) for q in rows])  # each question encoded once
    out = {}
    for name, retrieve in musique.retrievers(settings.hgmem.top_entities).items():
        got = [retrieve(store, v, k) for v in vecs]
        out[f"{name} top-{k} (no LLM)"] = {
            f"answer_recall@{k}": musique.mean_recall(zip(got, (q["supporting_doc_ids"] for q in rows)), k),
            f"n_answer_recall@{k}": len(rows), "questions": len(rows), "tokens/q": 0}
    return out


def run_tables(settings: Settings, graph: str, questions: str, output: str, *, methods: Sequence[str] = METHODS,
               limit: int | None = None, drop: float = 0.5, seed: int = 0, also: dict[str, str] | None = None,
               dataset: str = "musique", llm: LLM | None = None, max_steps: Sequence[int] | None = None,
               baselines: bool = True, score_only: bool = False, common: bool = False) -> dict[str, Any]:
    """``{graph name: score_runs result}``; also written to ``OUT/tables.json``. With ``max_steps``, every
    method runs once per last step t, its rows named ``method t=T``. ``score_only``: answer nothing, score
    the run folders as they are (a run stopped early); ``common``: score only the questions every run
    answered, the baselines' rows too."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; methods: {', '.join(METHODS)}")
    if dataset in report.JUDGED:
        raise ValueError(f"{dataset} is scored by an LLM judge: run the methods with answer_queries.py and score "
                         f"them with python -m memgraft.eval score")
    out = Path(output)
    graphs = {"full": graph}
    if drop > 0:
        degraded = out / "graphs" / f"drop-{drop:g}-seed-{seed}"
        if not (degraded / "manifest.json").exists():  # a rerun keeps the copy its answers came from
            write_degraded(graph, str(degraded), drop, seed)
        graphs[f"{drop:.0%} dropped"] = str(degraded)
    graphs.update(also or {})
    if not score_only:
        started = init_ray()
        llm = llm if llm is not None else start_llm(settings, started)  # one engine for every run
    tables: dict[str, Any] = {}
    steps = list(max_steps) if max_steps else [None]
    for name, folder in graphs.items():
        runs, names = [], []
        for t in steps:  # t=0 for every method first: a run stopped early still has its cheap rows
            for method in methods:
                run = out / "runs" / _slug(name) / (method if t is None else f"{method}-t{t}")
                if not score_only:
                    run_answers(settings if t is None else with_max_step(settings, t), folder, questions,
                                str(run), method, limit=limit, llm=llm)
                if (run / "answers.jsonl").exists():
                    runs.append(str(run))
                    names.append(method if t is None else f"{method} t={t}")
        ids = None
        if common:
            answered = [{str(r["id"]) for r in report.read_answers(r)} for r in runs]
            ids = set.intersection(*answered) if answered else set()
        result = report.score_runs(runs, dataset, graph=folder if dataset == "musique" else None, ids=ids)
        result.pop("questions", None)
        result["methods"] = dict(zip(names, result["methods"].values()))  # one method per run folder
        if baselines and dataset == "musique":
            result["methods"].update(retrieval_rows(settings, folder, questions, limit, ids=ids))
        tables[name] = result
    (out / "tables.json").write_text(json.dumps(tables, indent=1, default=str))
    return tables


def print_tables(tables: dict[str, Any], text_file: str | Path | None = None) -> None:
    """Print the tables; with ``text_file``, write them there as printed (plain text)."""
    from rich.console import Console

    console = Console(width=200) if not sys.stdout.isatty() else Console()
    plain = Console(width=250, record=True, file=open(os.devnull, "w"), color_system=None)
    for name, result in tables.items():
        t = report.table(result)
        t.title = f"graph: {name}"
        console.print(t)
        plain.print(t)
    if text_file is not None:
        Path(text_file).write_text(plain.export_text())


def main(
    graph: str = typer.Option(..., help="a graph folder built by build_graphs.py"),
    questions: str = typer.Option(..., help="questions JSONL with gold answers (python -m memgraft.eval questions)"),
    output: str = typer.Option(..., help="folder for the degraded graph, the runs and tables.json"),
    methods: str = typer.Option(",".join(METHODS), help="comma-separated methods"),
    limit: Optional[int] = typer.Option(None, help="the first N questions"),
    drop: float = typer.Option(0.5, help="share of entities and relations the degraded copy drops (0: none)"),
    seed: int = typer.Option(0, help="which ones it drops"),
    also: list[str] = typer.Option([], "--also", help="NAME=DIR: another graph of the same documents (repeatable)"),
    dataset: str = typer.Option("musique", help="how answers are scored (musique or another unjudged dataset)"),
    max_steps: str = typer.Option("", "--max-steps", help="comma-separated last steps t: every method once per t "
                                  "(default: the settings' hgmem.max_step)"),
    baselines: bool = typer.Option(True, help="musique: add dense and graph top-5 recall rows (no LLM)"),
    score_only: bool = typer.Option(False, "--score-only", help="answer nothing: score the run folders as they are"),
    common: bool = typer.Option(False, "--common", help="score only the questions every run answered"),
    profile: str = typer.Option("local"),
    set_: list[str] = typer.Option([], "--set", help="section.field=value (repeatable)"),
    verbose: bool = typer.Option(False, "--verbose"),
) -> None:
    configure_output(verbose)
    extra = dict(a.split("=", 1) for a in also if "=" in a)
    if len(extra) != len(also):
        raise typer.BadParameter("--also takes NAME=DIR")
    try:
        tables = run_tables(load_settings(profile, set_), graph, questions, output, methods=methods.split(","),
                            limit=limit, drop=drop, seed=seed, also=extra, dataset=dataset,
                            max_steps=[int(t) for t in max_steps.split(",") if t.strip()], baselines=baselines,
                            score_only=score_only, common=common)
    except (FileNotFoundError, ValueError, PipelineFitError) as err:
        typer.echo(f"eval_hgmem: {err}", err=True)
        raise typer.Exit(2) from err
    print_tables(tables, Path(output) / "tables.txt")
    typer.echo(f"tables written to {Path(output) / 'tables.json'} and {Path(output) / 'tables.txt'}")


if __name__ == "__main__":
    typer.run(main)
