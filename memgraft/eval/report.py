"""Score answer runs: read ``answers.jsonl`` folders, score each method, print a table.

A run folder is what ``pipelines/answer_queries.py`` writes: ``answers.jsonl`` (one line
per question) and ``traces/``. Lines are grouped by their ``method``, so one folder may
hold several methods, and several folders may be scored together; a method that appears
in more than one folder is shown once per folder, as ``method (folder)``. A question
answered twice for the same method counts once, by its last line.

Gold comes from the lines themselves (the questions' pass-through fields) or, with
``questions``, from a questions file joined by id (for a run made from a file that
lacked them, or from MuSiQue's raw JSON, whose ``answer`` field the answer overwrites).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from memgraft.eval import musique, scoring
from memgraft.eval.datasets import DATASETS, load_dataset
from memgraft.eval.judges import Judge

JUDGED = ("narrativeqa", "nocha", "longbench", "prelude")

# Columns of the printed table, per dataset, then the cost columns every dataset gets.
COLUMNS = {
    "musique": ("em", "f1", "recall", "passages/q", "answer_recall@5", "vertices_in_graph", "points_citing"),
    "narrativeqa": ("accuracy",),
    "nocha": ("pair_accuracy", "claim_accuracy"),
    "longbench": ("comprehensiveness", "diversity", "comprehensiveness_win", "diversity_win"),
    "prelude": ("accuracy", "macro_f1"),
}
COST_COLUMNS = ("questions", "failures", "judge_failures", "tokens/q", "llm_calls/q", "steps/q", "seconds/q")


@dataclass
class MethodRun:
    name: str  # as shown: the method, or "method (folder)" when several folders share it
    method: str
    run_dir: Path
    rows: list[dict[str, Any]] = field(default_factory=list)


# -- reading runs -------------------------------------------------------------------------


def read_answers(run_dir: str | Path) -> list[dict[str, Any]]:
    """The lines of ``run_dir/answers.jsonl`` (a torn last line, from a killed driver, is skipped)."""
    path = Path(run_dir) / "answers.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} holds no answers.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            if n == len(lines):
                continue
            raise ValueError(f"{path}:{n}: not JSON ({err.msg})") from err
    return rows


def load_runs(run_dirs: Sequence[str | Path]) -> list[MethodRun]:
    """Every (folder, method) in ``run_dirs``, in the order first seen."""
    found: list[MethodRun] = []
    for run_dir in map(Path, run_dirs):
        by_method: dict[str, dict[str, dict[str, Any]]] = {}
        for row in read_answers(run_dir):
            row["id"] = str(row["id"])
            by_method.setdefault(str(row.get("method") or "?"), {})[row["id"]] = row
        found += [MethodRun(m, m, run_dir, list(rows.values())) for m, rows in by_method.items()]
    counts: dict[str, int] = {}
    for r in found:
        counts[r.method] = counts.get(r.method, 0) + 1
    for r in found:
        if counts[r.method] > 1:
            r.name = f"{r.method} ({r.run_dir.name or r.run_dir})"
    return found


RAW_MARKERS = {"musique": "paragraphs", "nocha": "true_claim"}


def load_gold(dataset: str, path: str | Path, corpus: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Questions by id from ``path``: the dataset's own file (through its loader) or a
    questions JSONL already written by ``questions`` (read as it is)."""
    from memgraft.eval.prelude import read_rows

    records = list(read_rows(path))  # JSONL and JSON lists; PRELUDE's Parquet and CSV too
    marker = RAW_MARKERS.get(dataset)
    if dataset == "prelude":
        raw = not any("question" in r for r in records[:1])  # a written questions file has its question
    else:
        raw = marker is None or any(marker in r for r in records[:1])
    if raw:
        records = load_dataset(dataset, path, corpus=corpus)
    return {str(q["id"]): q for q in records}


def join_gold(rows: Sequence[dict[str, Any]], questions: Mapping[str, Mapping[str, Any]]) -> None:
    """Fill each line's missing gold fields from its question (by id); the line's own win."""
    for row in rows:
        q = questions.get(row["id"])
        if q:
            for k, v in q.items():
                if k not in row or (k in ("answers", "supporting_doc_ids") and not row[k]):
                    row[k] = v


# -- traces and passages ---------------------------------------------------------------------


def trace_path(row: Mapping[str, Any], run_dir: Path) -> Path | None:
    """Where a line's trace is: as written, relative to the folder, or in its ``traces/``."""
    raw = row.get("trace")
    if not raw:
        return None
    path = Path(raw)
    for candidate in (path, run_dir / path, run_dir / "traces" / path.name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"trace {raw} of question {row['id']} not found (looked beside {run_dir})")


def trace_chunk_ids(trace: Mapping[str, Any]) -> list[str]:
    """Every chunk a method retrieved, in order, once each: HGMem's per-subquery chunks of
    every step and the answer's chunks; a baseline's ``retrieved`` chunks."""
    ids = [c for step in trace.get("steps") or [] for sq in step.get("subqueries") or [] for c in sq.get("chunk_ids") or []]
    ids += list((trace.get("answer") or {}).get("chunk_ids") or []) if isinstance(trace.get("answer"), Mapping) else []
    ids += list((trace.get("retrieved") or {}).get("chunk_ids") or [])
    return list(dict.fromkeys(ids))


def chunk_docs(graph: str) -> dict[str, str]:
    """chunk_id -> doc_id from a graph folder's ``chunks.parquet``."""
    from memgraft.graph.folder import GraphFolder

    table = GraphFolder(graph).read_table("chunks", columns=["chunk_id", "doc_id"])
    return dict(zip(table.column("chunk_id").to_pylist(), table.column("doc_id").to_pylist()))


def graph_entity_ids(graph: str) -> set[str] | None:
    """The entity ids of a graph folder's ``entities.parquet``; None where it has none."""
    from memgraft.graph.folder import GraphFolder

    try:
        table = GraphFolder(graph).read_table("entities", columns=["entity_id"])
    except (FileNotFoundError, OSError):
        return None
    return set(table.column("entity_id").to_pylist())


def traces_of(run: MethodRun):
    """A function from a line to its trace (read once per line), None where it has none."""
    cache: dict[str, Any] = {}

    def trace(row: Mapping[str, Any]) -> dict[str, Any] | None:
        if row["id"] not in cache:
            path = trace_path(row, run.run_dir)
            cache[row["id"]] = None if path is None else json.loads(path.read_text(encoding="utf-8"))
        return cache[row["id"]]

    return trace


def retrieved_chunks_of(run: MethodRun, doc_of: Mapping[str, str], trace_of=None):
    """A function from a line to its retrieved chunks, checking every chunk is in the graph."""
    trace_of = trace_of or traces_of(run)

    def chunks(row: Mapping[str, Any]) -> list[str]:
        trace = trace_of(row)
        if trace is None:
            return []
        ids = trace_chunk_ids(trace)
        unknown = [c for c in ids if c not in doc_of]
        if unknown:
            raise ValueError(f"{run.name}, question {row['id']}: {len(unknown)} chunk(s) not in the graph's "
                             f"chunks.parquet (first {unknown[0]!r}): is --graph the graph this run used?")
        return ids

    return chunks


# -- scoring -----------------------------------------------------------------------------------


def score_runs(
    run_dirs: Sequence[str | Path],
    dataset: str,
    *,
    graph: str | None = None,
    questions: str | Path | None = None,
    corpus: str | Path | None = None,
    judge: Judge | None = None,
    baseline: str | None = None,
    ids: set[str] | None = None,
) -> dict[str, Any]:
    """``{"dataset", "methods": {name: {metric: value}}, "questions": [...], ...}`` for the runs (with ``ids``,
    only those questions' lines)."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; datasets: {', '.join(DATASETS)}")
    if dataset in JUDGED and judge is None:
        raise ValueError(f"{dataset} is scored by an LLM judge: pass one")
    runs = load_runs(run_dirs)
    if ids is not None:
        for run in runs:
            run.rows = [r for r in run.rows if r["id"] in ids]
    if questions is not None:
        gold = load_gold(dataset, questions, corpus)
        for run in runs:
            join_gold(run.rows, gold)
    base_rows = None
    if baseline is not None:
        matches = [r for r in runs if baseline in (r.name, r.method)]
        if len(matches) != 1:
            raise ValueError(f"baseline {baseline!r} names {len(matches)} of the runs' methods "
                             f"({', '.join(r.name for r in runs)}); it must name one")
        base_rows = matches[0].rows
    doc_of = chunk_docs(graph) if graph and dataset == "musique" else None
    entity_ids = graph_entity_ids(graph) if doc_of is not None else None
    passage_ids = musique.PassageIds.from_corpus(corpus) if corpus and dataset == "musique" else None
    methods: dict[str, dict[str, Any]] = {}
    per_question: list[dict[str, Any]] = []
    for run in runs:
        if dataset == "musique":
            trace_of = traces_of(run)
            chunks = retrieved_chunks_of(run, doc_of, trace_of) if doc_of is not None else None
            metrics, per_q = scoring.score_musique(run.rows, chunks, doc_of, passage_ids, trace_of, entity_ids)
        elif dataset == "narrativeqa":
            metrics, per_q = scoring.score_narrativeqa(run.rows, judge)
        elif dataset == "nocha":
            metrics, per_q = scoring.score_nocha(run.rows, judge)
        elif dataset == "prelude":
            metrics, per_q = scoring.score_prelude(run.rows, judge)
        else:
            is_base = base_rows is not None and run.rows is base_rows
            metrics, per_q = scoring.score_longbench(run.rows, judge, None if is_base else base_rows)
        methods[run.name] = {**metrics, **scoring.usage_metrics(run.rows)}
        per_question += [{"method": run.name, **q} for q in per_q]
    out: dict[str, Any] = {
        "dataset": dataset, "runs": [str(Path(d)) for d in run_dirs], "graph": graph, "baseline": baseline,
        "methods": {m: {k: scoring.finite(v) for k, v in ms.items()} for m, ms in methods.items()},
    }
    if judge is not None:
        u = judge.session.usage
        out["judge"] = {"llm": getattr(judge.session.llm, "name", "?"), "calls": u.calls,
                        "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                        "failures": len(judge.failures)}
    if dataset == "musique" and doc_of is None:
        out["note"] = "no --graph: supporting-passage recall was not computed"
    out["questions"] = per_question
    return out


# -- output ------------------------------------------------------------------------------------


def columns(result: Mapping[str, Any]) -> list[str]:
    """The table's columns: the dataset's metrics present in any method, then the costs."""
    present = {k for ms in result["methods"].values() for k in ms}
    shape = ["hyperedge_size", *sorted(k for k in present if k.startswith("hyperedge_size["))]
    return [c for c in (*COLUMNS[result["dataset"]], *COST_COLUMNS, *shape) if c in present]


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3f}"
    return str(value)


def table(result: Mapping[str, Any]):
    """A rich table: one row per method, one column per metric."""
    from rich.table import Table

    cols = columns(result)
    t = Table(title=f"{result['dataset']}: {len(result['methods'])} method(s)")
    t.add_column("method", style="bold")
    for c in cols:
        t.add_column(c, justify="right")
    for name, ms in result["methods"].items():
        t.add_row(name, *(_cell(ms.get(c)) for c in cols))
    return t


def write_json(result: Mapping[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    return path


def default_output(run_dirs: Sequence[str | Path], dataset: str) -> Path:
    """``<run>/scores.<dataset>.json`` for one run; beside the runs, in their common folder, for several."""
    dirs = [Path(d).resolve() for d in run_dirs]
    if len(dirs) == 1:
        return dirs[0] / f"scores.{dataset}.json"
    import os

    return Path(os.path.commonpath([str(d.parent) for d in dirs])) / f"scores.{dataset}.json"
