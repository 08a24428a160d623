"""``python -m memgraft.eval``: make questions files, and score answer runs.

    python -m memgraft.eval questions --dataset musique --input ../shared/data/musique/musique_train.json --output q.jsonl
    python -m memgraft.eval score --run OUT [--run OUT2 ...] --dataset musique --graph GRAPH_DIR
    python -m memgraft.eval score --run OUT --dataset nocha --judge-profile local [--set models.llm=...]
    python -m memgraft.eval questions --dataset prelude --input public.parquet --output q.jsonl [--column prequel=content] [--language en]
    python -m memgraft.eval score --run OUT_HGMEM --run OUT_NAIVE --dataset longbench --baseline naive
    python -m memgraft.eval collab          # generated, TimeQA val pages, SituatedQA dev: each a table
    python -m memgraft.eval collab --generate --updater rules --answers 10
    python -m memgraft.eval collab --timeqa ../shared/data/timeqa-train/human_annotated_train.json --timeqa-split val
    python -m memgraft.eval collab --suite real-team --split test   # dense, prose, noisy, two teams, decisions
    python -m memgraft.eval collab --variant dense,decisions --split dev --pages 10 --sq-questions 40
    python -m memgraft.eval collab --data DATASET_DIR --updater llm --set models.llm=CHECKPOINT
    python -m memgraft.eval collab --generate --banks-url postgresql://USER@HOST/DB   # the banks in PostgreSQL

``score`` prints a table of methods x metrics and writes the scores (and every
question's) as JSON: ``--output``, or ``scores.<dataset>.json`` in the run folder.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import replace
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
    column: list[str] = typer.Option([], "--column", help="prelude: FIELD=COLUMN, where a field's column has "
                                                          "another name (fields: id, book, char, prequel, label, "
                                                          "language)"),
    language: Optional[str] = typer.Option(None, "--language", help="prelude: keep one language's records, en or zh "
                                           "(from a language column, else the prequel's script)"),
) -> None:
    """Turn a dataset's file into the questions JSONL the driver reads."""
    from memgraft.eval.prelude import parse_columns

    try:
        qs = datasets.load_dataset(dataset, input, corpus=corpus, columns=parse_columns(column), language=language)
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


def _collab_datasets(data, generate, teams, seed, timeqa, timeqa_split, pages, situatedqa, questions_limit,
                     one_wording=False, suite=None, variant=None, split="test", team_sources="timeqa,situatedqa"):
    """(title, dataset) pairs to score; with no source named, the generated stream, both real conversions (the
    development sets) and the real-team rows on the held-out test split."""
    from memgraft.collab.data import read_dataset
    from memgraft.collab.data import variants as real_team
    from memgraft.collab.train.judge_data import SHARED_DATA

    if suite not in (None, "real-team"):
        raise ValueError(f"--suite must be real-team, not {suite!r}")
    everything = not (data or generate or timeqa or situatedqa or suite or variant)
    out = []
    if data:
        out.append((f"dataset {data}", read_dataset(data)))
    if generate or everything:
        from memgraft.collab.data.generator import generate as make

        out.append((f"generated (seed {seed}, {teams} teams)", make(seed=seed, teams=teams)))
    if timeqa or everything:
        from memgraft.collab.data import timeqa as tq

        path = timeqa or str(SHARED_DATA / "timeqa-train" / "human_annotated_train.json")
        pages_ = tq.select_split(tq.load_pages(path, pages), timeqa_split)
        dev = " (development set: rules were developed on it)" if timeqa_split == "val" else ""
        out.append((f"TimeQA ({timeqa_split} pages of {Path(path).name}{', one wording' if one_wording else ''}){dev}",
                    tq.convert(pages_, one_wording=one_wording)[0]))
    if situatedqa or everything:
        from memgraft.collab.data import situatedqa as sq

        path = situatedqa or str(SHARED_DATA / "situatedqa-train" / "temp.dev.jsonl")
        dev = " (development set: rules were developed on it)" if Path(path).name == "temp.dev.jsonl" else ""
        out.append((f"SituatedQA ({Path(path).name}){dev}", sq.convert(sq.load_rows(path, questions_limit))[0]))
    if suite or variant or everything:
        names = [v.strip() for v in variant.split(",") if v.strip()] if variant else list(real_team.ROWS)
        sources = [s.strip() for s in team_sources.split(",") if s.strip()]
        out += real_team.real_team_rows(split, names, sources, pages=pages, questions=questions_limit, seed=seed)
    return out


@app.command()
def collab(
    data: Optional[str] = typer.Option(None, help="a HiCoMER dataset folder (stream, questions, gold, memories)"),
    generate: bool = typer.Option(False, "--generate", help="score a freshly generated dataset"),
    teams: int = typer.Option(8, help="--generate: teams (half train the validity scorer, half are scored)"),
    seed: int = typer.Option(0, help="--generate: generator seed; also the team split's seed"),
    timeqa: Optional[str] = typer.Option(None, help="score the conversion of these TimeQA pages"),
    timeqa_split: str = typer.Option("val", help="--timeqa: which pages (train, val, all); the judge trains on train"),
    one_wording: bool = typer.Option(False, "--one-wording", help="--timeqa: each subject's records in one wording"),
    pages: Optional[int] = typer.Option(None, help="--timeqa: read only the first N pages"),
    situatedqa: Optional[str] = typer.Option(None, help="score the conversion of this SituatedQA file (default dev)"),
    sq_questions: Optional[int] = typer.Option(None, "--sq-questions", help="--situatedqa and the real-team "
                                               "SituatedQA rows: first N question ids"),
    suite: Optional[str] = typer.Option(None, "--suite", help="real-team: every variant of both sources and the "
                                        "team decisions, on --split"),
    variant: Optional[str] = typer.Option(None, "--variant", help="real-team rows to score, comma-separated: "
                                          "dense, prose, noisy, two-teams, decisions (default: all)"),
    split: str = typer.Option("test", "--split", help="real-team rows: test (reported, never tuned on) or dev "
                              "(develop on it); halves of TimeQA's val pages, SituatedQA's dev ids, the decision teams"),
    team_sources: str = typer.Option("timeqa,situatedqa", "--team-sources", help="real-team rows: which sources' "
                                     "variants (--pages caps TimeQA's pages, --sq-questions SituatedQA's ids)"),
    updater: str = typer.Option("judge", help="the bank HiCoMER's rows read: judge, rules, llm or gold (an oracle)"),
    methods: Optional[str] = typer.Option(None, help="comma-separated subset of the methods (default: all)"),
    answers: int = typer.Option(0, help="questions per method answered by the LLM for ROUGE-L and Decision F1"),
    max_questions: Optional[int] = typer.Option(None, help="score at most this many test questions"),
    profile: str = typer.Option("local", help="settings profile"),
    set_: list[str] = typer.Option([], "--set", help="settings: section.field=value (repeatable)"),
    workdir: str = typer.Option("out/collab-eval", help="where the banks are built"),
    banks_url: Optional[str] = typer.Option(None, "--banks-url", help="build the banks in this PostgreSQL database "
                                            "(postgresql://…, pgvector; a schema per bank), not SQLite files"),
    output: Optional[str] = typer.Option(None, help="JSON to write (default <workdir>/scores.json)"),
) -> None:
    """HiCoMER and its baselines: updaters x (Conflict F1, Maintenance Acc., validity P/R), methods x (ORR, CRR, NDCG,
    P@1, ROUGE-L, Decision F1). With no source named: the generated stream, TimeQA's val pages and SituatedQA's dev file
    (development sets), and the real-team rows on the test split (--suite real-team alone: just those)."""
    from memgraft.collab.evaluate import harness as evaluate
    from memgraft.collab.evaluate.report import print_report
    from memgraft.config import load_settings
    from memgraft.models.embedder import load_embedder
    from memgraft.models.reranker import load_reranker

    try:
        sources = _collab_datasets(data, generate, teams, seed, timeqa, timeqa_split, pages, situatedqa, sq_questions,
                                   one_wording, suite, variant, split, team_sources)
    except (OSError, ValueError) as err:
        typer.echo(f"collab: {err}", err=True)
        raise typer.Exit(2)
    settings = load_settings(profile, set_)
    embedder = load_embedder(settings)
    reranker = load_reranker(settings, embedder)
    options = evaluate.EvalOptions(methods=tuple(methods.split(",")) if methods else evaluate.EvalOptions().methods,
                                   updater=updater, answers=answers, max_questions=max_questions, seed=seed,
                                   banks_url=banks_url)
    written = {}
    for i, (title, dataset) in enumerate(sources):
        try:
            # real-team rows: every team's questions are scored (two teams holding the same subjects are both
            # asked); the learned scorer, when named, then trains on the scored questions and the table says so
            row_options = replace(options, test_fraction=1.0) if dataset.info.get("real_team") else options
            result = evaluate.run_eval(dataset, settings, Path(workdir) / f"d{i}", row_options, embedder=embedder,
                                       reranker=reranker, log=lambda s: typer.echo(s, err=True))
        except ValueError as err:
            typer.echo(f"collab: {err}", err=True)
            raise typer.Exit(2)
        print_report(result, title, options.k)
        written[title] = {"counts": dataset.counts(), "updaters": result.updaters, "validity": result.validity,
                          "methods": result.methods, "scorer_training": result.scorer_training, "info": result.info,
                          "questions": result.questions}
    path = Path(output or Path(workdir) / "scores.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(written, indent=1, default=str))
    typer.echo(f"scores written to {path}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
