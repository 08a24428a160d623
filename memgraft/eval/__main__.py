"""``python -m memgraft.eval``: make questions files, and score answer runs.

    python -m memgraft.eval questions --dataset musique --input ../shared/data/musique/musique_train.json --output q.jsonl
    python -m memgraft.eval score --run OUT [--run OUT2 ...] --dataset musique --graph GRAPH_DIR
    python -m memgraft.eval score --run OUT --dataset nocha --judge-profile local [--set models.llm=...]
    python -m memgraft.eval score --run OUT_HGMEM --run OUT_NAIVE --dataset longbench --baseline naive

``score`` prints a table of methods x metrics and writes the scores (and every
question's) as JSON: ``--output``, or ``scores.<dataset>.json`` in the run folder.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Optional

import typer

from memgraft.eval import datasets, report

app = typer.Typer(add_completion=False, help="Dataset loaders and scorers for HGMem runs.")


def _dataset(value: str) -> str:
    if value not in datasets.DATASETS:
        raise typer.BadParameter(f"one of {', '.join(datasets.DATASETS)}")
    return value


@app.command()
def questions(
    dataset: str = typer.Option(..., callback=_dataset, help=f"one of {', '.join(datasets.DATASETS)}"),
    input: str = typer.Option(..., "--input", help="the dataset's file"),
    output: str = typer.Option(..., help="questions JSONL to write"),
    corpus: Optional[str] = typer.Option(None, help="musique: the passage corpus (default <input stem>_corpus.json)"),
    limit: Optional[int] = typer.Option(None, help="write at most this many questions (nocha: whole pairs)"),
) -> None:
    """Turn a dataset's file into the questions JSONL the driver reads."""
    try:
        qs = datasets.load_dataset(dataset, input, corpus=corpus)
    except (OSError, ValueError) as err:
        typer.echo(f"questions: {err}", err=True)
        raise typer.Exit(2)
    if limit is not None and dataset == "nocha":
        limit = 2 * math.ceil(limit / 2)
    n = datasets.write_questions(qs, output, limit)
    note = ""
    if dataset == "musique" and qs and "supporting_doc_ids" not in qs[0]:
        note = " (no corpus found: supporting passages kept as (title, text); pass --corpus to score to map them)"
    typer.echo(f"wrote {n} {dataset} questions to {output}{note}")


@app.command()
def score(
    run: list[str] = typer.Option(..., "--run", help="an answer_queries output folder (repeatable)"),
    dataset: str = typer.Option(..., callback=_dataset, help=f"one of {', '.join(datasets.DATASETS)}"),
    graph: Optional[str] = typer.Option(None, help="musique: the graph folder the runs used (for passage recall)"),
    questions_file: Optional[str] = typer.Option(None, "--questions", help="join gold fields by id from this dataset file"),
    corpus: Optional[str] = typer.Option(None, help="musique: the passage corpus, to map (title, text) gold"),
    judge_profile: str = typer.Option("local", help="settings profile the LLM judge is built from"),
    set_: list[str] = typer.Option([], "--set", help="judge settings: section.field=value (repeatable)"),
    judge_temperature: float = typer.Option(0.0, help="judge sampling temperature"),
    judge_max_tokens: int = typer.Option(512, help="judge max new tokens"),
    baseline: Optional[str] = typer.Option(None, help="longbench: compare every method pairwise against this one"),
    output: Optional[str] = typer.Option(None, help="JSON to write (default scores.<dataset>.json beside the run)"),
) -> None:
    """Score one or more runs: a table of methods x metrics, and JSON."""
    from rich.console import Console

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    judge = None
    if dataset in report.JUDGED:
        from memgraft.config import load_settings
        from memgraft.eval.judges import Judge
        from memgraft.models.llm import load_llm

        settings = load_settings(judge_profile, set_)
        judge = Judge.from_llm(load_llm(settings), settings.generation, temperature=judge_temperature,
                               max_new_tokens=judge_max_tokens)
    try:
        result = report.score_runs(run, dataset, graph=graph, questions=questions_file, corpus=corpus, judge=judge,
                                   baseline=baseline)
    except (OSError, ValueError, KeyError) as err:
        typer.echo(f"score: {err}", err=True)
        raise typer.Exit(2)
    path = report.write_json(result, output or report.default_output(run, dataset))
    console = Console()
    if not console.is_terminal:  # piped or captured: do not squeeze the table into 80 columns
        console = Console(width=max(console.width, 200))
    console.print(report.table(result))
    if result.get("note"):
        console.print(result["note"], soft_wrap=True)
    if result.get("judge"):
        console.print(f"judge: {json.dumps(result['judge'])}", soft_wrap=True)
    console.print(f"scores written to {path}", soft_wrap=True)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
