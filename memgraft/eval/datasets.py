"""Dataset loaders: each benchmark's files -> the questions JSONL the driver reads.

A question is ``{"id", "question", ...gold}``; the driver (``pipelines/answer_queries.py``)
copies every other field into its answer line, so the gold travels with the answer
and ``python -m memgraft.eval score`` finds it there. Gold never goes under a key the
answer line itself writes (``answer``, ``method``, ``error``, ``steps``, ``trace``, ...):
reference answers are the list ``answers``.

- **musique**: ``musique_*.json`` via :mod:`memgraft.eval.musique`: ``answers`` (the
  answer and its aliases), ``hops``, and ``supporting_doc_ids`` (the graph's doc_ids of
  the supporting passages, from the corpus file; without one, ``supporting`` holds the
  (title, paragraph) pairs for ``score --corpus`` to map later).
- **narrativeqa**: JSONL ``{"id", "question", "answers": [...]}``; a question or an answer
  may also be an object with ``text`` (the Hugging Face layout), and a single reference
  may come as ``answer``.
- **nocha**: JSONL ``{"pair_id", "true_claim", "false_claim", ...}``: each pair becomes two
  yes/no questions, ``<pair_id>/true`` and ``<pair_id>/false``, with ``claim``, ``label``
  (the expected verdict) and ``pair_id``. NoCha counts a pair only when both are right.
- **longbench**: JSONL (or a JSON list) ``{"id" | "_id", "question" | "input", ...}``;
  ``context`` (the documents the graph is built from) is dropped; reference answers, if
  any (``answers``, or ``answer``), become ``answers``.
- **prelude**: PRELUDE's Parquet (or JSONL, CSV) via :mod:`memgraft.eval.prelude`: one true/false
  question per prequel ("consistent with the book?"), with ``claim``, ``label`` and ``gold``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from memgraft.eval import musique, prelude
from memgraft.eval.records import DatasetError, extra_fields, read_records

DATASETS = ("musique", "narrativeqa", "nocha", "longbench", "prelude")

def _text(value: Any) -> str:
    return str(value.get("text", "")) if isinstance(value, Mapping) else str(value)


def _need(record: Mapping[str, Any], *keys: str, where: str) -> None:
    missing = [k for k in keys if k not in record]
    if missing:
        raise DatasetError(f"{where}: missing {', '.join(repr(k) for k in missing)}")


# -- the loaders ------------------------------------------------------------------------------


def musique_questions(path: str | Path, corpus: str | Path | None = None) -> list[dict[str, Any]]:
    """MuSiQue questions; ``corpus`` defaults to ``<stem>_corpus.json`` beside ``path`` if it exists."""
    path = Path(path)
    if corpus is None:
        guess = path.with_name(f"{path.stem}_corpus.json")
        corpus = guess if guess.exists() else None
    ids = musique.PassageIds.from_corpus(corpus) if corpus is not None else None
    out = []
    for q in musique.load_questions(path):
        row: dict[str, Any] = {"id": q.id, "question": q.question, "answers": q.answers, "hops": q.hops}
        if ids is not None:
            row["supporting_doc_ids"] = ids.gold(q)
        else:
            row["supporting"] = [list(p) for p in q.supporting]
        out.append(row)
    return out


def _answers(record: Mapping[str, Any]) -> list[str] | None:
    """Reference answers: ``answers`` (a list, or one), else a single ``answer``; None if neither."""
    raw = record.get("answers", record.get("answer"))
    if raw is None:
        return None
    return [_text(a) for a in (raw if isinstance(raw, list) else [raw])]


def narrativeqa_questions(path: str | Path) -> list[dict[str, Any]]:
    out = []
    for n, r in enumerate(read_records(path), 1):
        _need(r, "id", "question", where=f"{path} record {n}")
        answers = _answers(r)
        if answers is None:
            raise DatasetError(f"{path} record {n}: missing 'answers'")
        if not any(a.strip() for a in answers):
            raise DatasetError(f"{path} record {n}: no reference answer")
        out.append({"id": str(r["id"]), "question": _text(r["question"]), "answers": answers,
                    **extra_fields(r, ("id", "question", "answers"))})
    return out


def nocha_question(claim: str, book: str | None = None) -> str:
    """What the system is asked about one claim."""
    about = f"the book {book!r}" if book else "the book"
    return (f"Is the following claim about {about} true or false? Begin your answer with True or False, "
            f"then explain briefly.\nClaim: {claim}")


def nocha_questions(path: str | Path) -> list[dict[str, Any]]:
    out = []
    seen: set[str] = set()
    for n, r in enumerate(read_records(path), 1):
        _need(r, "pair_id", "true_claim", "false_claim", where=f"{path} record {n}")
        pair = str(r["pair_id"])
        if pair in seen:
            raise DatasetError(f"{path} record {n}: pair_id {pair!r} repeats")
        seen.add(pair)
        book = r.get("book_title") or r.get("book")
        extra = extra_fields(r, ("pair_id", "true_claim", "false_claim", "id", "question", "claim", "label"))
        for label, claim in ((True, r["true_claim"]), (False, r["false_claim"])):
            out.append({"id": f"{pair}/{'true' if label else 'false'}", "question": nocha_question(claim, book),
                        "claim": claim, "label": label, "pair_id": pair, **extra})
    return out


def longbench_questions(path: str | Path) -> list[dict[str, Any]]:
    out = []
    for n, r in enumerate(read_records(path), 1):
        qid, question = r.get("id", r.get("_id")), r.get("question", r.get("input"))
        if qid is None or question is None:
            raise DatasetError(f"{path} record {n}: needs 'id' (or '_id') and 'question' (or 'input')")
        row = {"id": str(qid), "question": str(question), **extra_fields(r, ("id", "_id", "question", "input", "context"))}
        if (answers := _answers(r)) is not None:
            row["answers"] = answers
        out.append(row)
    return out


LOADERS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "musique": musique_questions,
    "narrativeqa": narrativeqa_questions,
    "nocha": nocha_questions,
    "longbench": longbench_questions,
    "prelude": prelude.prelude_questions,
}


def load_dataset(dataset: str, path: str | Path, *, corpus: str | Path | None = None,
                 columns: Mapping[str, str] | None = None, language: str | None = None) -> list[dict[str, Any]]:
    """``corpus`` is MuSiQue's passage file; ``columns`` names PRELUDE's columns (field -> column) and
    ``language`` keeps one of its two languages."""
    if dataset not in LOADERS:
        raise DatasetError(f"unknown dataset {dataset!r}; datasets: {', '.join(DATASETS)}")
    if language and dataset != "prelude":
        raise DatasetError(f"a language is chosen for prelude only, not {dataset}")
    if dataset == "musique":
        return musique_questions(path, corpus)
    if dataset == "prelude":
        return prelude.prelude_questions(path, columns, language)
    return LOADERS[dataset](path)


def write_questions(questions: Iterable[Mapping[str, Any]], output: str | Path, limit: int | None = None) -> int:
    """Write questions as JSONL (ids must be unique); returns how many were written."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    n = 0
    with output.open("w", encoding="utf-8") as sink:
        for q in questions:
            if limit is not None and n >= limit:
                break
            if q["id"] in seen:
                raise DatasetError(f"question id {q['id']!r} repeats")
            seen.add(q["id"])
            sink.write(json.dumps(dict(q), ensure_ascii=False) + "\n")
            n += 1
    return n
