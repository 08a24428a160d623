"""Convert SituatedQA temporal questions into a HiCoMER dataset (via :mod:`.facts`).

Why: TimeQA's facts are attribute-of-subject templates; SituatedQA's are plain questions
people ask ("who is the president of india"), so a model or a ranking checked on both is
not tuned to one phrasing (DESIGN.md, "Real-data conversions").

What the file holds (``temp.train.jsonl``, ``temp.dev.jsonl``): rows sharing an ``id``
are one question. ``date_type``: ``start`` marks the year (or day) an answer began to
hold, ``sampled_year``/``sampled_date`` a time inside some answer's span (the row's
``answer`` is the one holding then), ``orig`` a question whose answer does not change.

How it becomes timelines:

* **Changing questions** (two or more distinct dated answers once equal consecutive ones
  merge) are subjects; each ``start`` row a value from its time. One dated answer, or
  none, is skipped and counted.
* **Static questions** (only ``orig`` rows) become one-record subjects, never outdated:
  distractors that sit among the changing ones (``static_fraction`` of the changing
  count, chosen by seed), written at their row's date.
* **Sampled rows are as-of questions** in their ``edited_question`` wording; the gold
  comes from the timeline, and :mod:`.facts` skips and counts the ones whose ``answer``
  disagrees with it.

The dev file is the held-out check: convert it separately (``--input``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from memgraft.collab.data import Dataset, write_converted
from memgraft.collab.data.facts import Timeline, build, normalise_values

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "situatedqa-train"
DEFAULT_INPUT = DATA / "temp.train.jsonl"
AUTHOR = "situatedqa"
SAMPLED = ("sampled_year", "sampled_date")


def parse_when(text: str) -> str | None:
    """``"1984"`` -> ``"1984-01-01T00:00:00"``, ``"March 09, 2021"`` -> ``"2021-03-09T00:00:00"``; None if neither."""
    text = " ".join(str(text).split())
    for fmt in ("%Y", "%B %d, %Y", "%b %d, %Y", "%B %Y"):
        try:
            return datetime.strptime(text, fmt).strftime("%Y-%m-%dT%H:%M:%S")
        except ValueError:
            continue
    return None


def load_rows(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of the first ``limit`` questions (ids), in file order."""
    rows, ids = [], set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if limit is not None and row.get("id") not in ids and len(ids) >= limit:
                break
            ids.add(row.get("id"))
            rows.append(row)
    return rows


def _answers(row: dict[str, Any]) -> list[str]:
    raw = row.get("answer")
    items = raw if isinstance(raw, list) else [raw] if raw else []
    return list(dict.fromkeys(str(a).strip() for a in items if str(a).strip()))


def timelines(rows: Sequence[dict[str, Any]], *, static_fraction: float = 0.2, seed: int = 0,
              counts: Counter[str] | None = None) -> list[Timeline]:  # fmt: skip
    """Group rows by question id into timelines (changing ones, then the static sample)."""
    tally = counts if counts is not None else Counter()
    by_id: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        tally["rows"] += 1
        if not isinstance(row, dict) or "id" not in row or not row.get("question"):
            tally["rows_malformed"] += 1
            continue
        by_id.setdefault(str(row["id"]), []).append(row)
    tally["question_ids"] = len(by_id)
    changing, static = [], []
    for qid, group in by_id.items():
        values, asked = [], []
        for row in group:
            when, answers = parse_when(row.get("date", "")), _answers(row)
            if when is None or not answers:
                tally["rows_skipped_no_date_or_answer"] += 1
                continue
            if row.get("date_type") == "start":
                values.append((when, answers))
            elif row.get("date_type") in SAMPLED:
                asked.append((str(row.get("edited_question") or row["question"]), when, answers))
        line = Timeline(subject=f"sqa-{qid}", question=str(group[0]["question"]), values=values,
                        asked=asked, extra={"question_id": qid})  # fmt: skip
        kinds = {row.get("date_type") for row in group}
        if len(normalise_values(values)) >= 2:
            changing.append(line)
        elif kinds == {"orig"}:
            orig = next(r for r in group if r.get("date_type") == "orig")
            when, answers = parse_when(orig.get("date", "")), _answers(orig)
            if when is not None and answers:
                line.values = [(when, answers)]
                static.append(line)
        else:
            tally["questions_skipped_one_dated_answer"] += 1
            tally["asof_skipped_with_their_question"] += len(asked)
    k = min(len(static), round(static_fraction * len(changing)))
    picked = sorted(random.Random(f"situatedqa-static:{seed}").sample(range(len(static)), k))
    tally["questions_changing"] = len(changing)
    tally["questions_static_available"] = len(static)
    tally["questions_static_kept"] = k
    return changing + [static[i] for i in picked]


def convert(rows: Sequence[dict[str, Any]], source: str = "situatedqa", *, subjects_per_team: int = 40, seed: int = 0,
            static_fraction: float = 0.2, **options: Any) -> tuple[Dataset, dict[str, int]]:  # fmt: skip
    """Convert SituatedQA rows; returns the dataset and the conversion counts."""
    tally: Counter[str] = Counter()
    lines = timelines(rows, static_fraction=static_fraction, seed=seed, counts=tally)
    data = build(lines, source=source, author=AUTHOR, subjects_per_team=subjects_per_team, seed=seed,
                 counts=dict(tally), **options)  # fmt: skip
    return data, dict(data.info["counts"])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memgraft.collab.data.situatedqa", description=__doc__.split("\n")[0])
    p.add_argument("--input", type=Path, default=DEFAULT_INPUT, help="temp.train.jsonl (default) or temp.dev.jsonl")
    p.add_argument("--out", required=True, type=Path, help="folder for stream/questions/gold/memories .jsonl")
    p.add_argument("--limit", type=int, default=None, help="convert only the first N questions (ids)")
    p.add_argument("--subjects-per-team", type=int, default=40, help="subjects per team (0: one team)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--static-fraction", type=float, default=0.2, help="static distractors per changing question")
    a = p.parse_args(argv)
    data, counts = convert(load_rows(a.input, a.limit), subjects_per_team=a.subjects_per_team, seed=a.seed,
                           static_fraction=a.static_fraction)  # fmt: skip
    data.info["input"] = str(a.input)
    write_converted(data, a.out, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
