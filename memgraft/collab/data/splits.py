"""A held-out half that nobody tunes on: TimeQA's val pages and SituatedQA's dev ids, hashed into dev and test.

Why: the pair judge trains on TimeQA's ``train`` pages and SituatedQA's train file
(:mod:`memgraft.collab.train.judge_data`), and several of the updater's rules were developed
on TimeQA val and SituatedQA dev. So the part that was left is cut once more, by a hash
other than :func:`memgraft.collab.data.timeqa.split_of`'s: ``dev`` is for development,
``test`` is reported and never tuned on. The hash is of the page's index or the
question's id, salted, so the halves are stable across runs, machines and seeds, and
disjoint by construction.

``train`` is also accepted: the judge's own training part, for stress tests of the
dense shape only (never a result).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence


SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
SPLITS = ("dev", "test", "train")
SALT = "memgraft-heldout-v1"
TIMEQA_FILE = SHARED_DATA / "timeqa-train" / "human_annotated_train.json"
SITUATEDQA_DEV = SHARED_DATA / "situatedqa-train" / "temp.dev.jsonl"
SITUATEDQA_TRAIN = SHARED_DATA / "situatedqa-train" / "temp.train.jsonl"


def half_of(key: str) -> str:
    """"dev" or "test", about 50/50, by a salted SHA-256 of ``key``."""
    return "test" if int(hashlib.sha256(f"{SALT}:{key}".encode()).hexdigest(), 16) % 2 else "dev"


def _check(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def timeqa_pages(split: str, path: str | Path = TIMEQA_FILE, limit: int | None = None) -> list[dict[str, Any]]:
    """TimeQA pages of ``split``: dev/test halve the ``val`` pages (``timeqa.split_of``); train is the judge's part."""
    from memgraft.collab.data import timeqa

    _check(split)
    pages = timeqa.load_pages(path)
    if split == "train":
        return timeqa.select_split(pages, "train")[:limit]
    val = [(n, p) for n, p in enumerate(pages) if timeqa.split_of(p, n) == "val"]
    return [p for n, p in val if half_of(str(p.get("index", n))) == split][:limit]


def situatedqa_rows(split: str, path: str | Path | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """SituatedQA rows of ``split``: dev/test halve the dev file's question ids; train is the train file.
    ``limit``: the first N question ids of the half."""
    from memgraft.collab.data import situatedqa

    _check(split)
    if split == "train":
        return situatedqa.load_rows(path or SITUATEDQA_TRAIN, limit)
    rows = situatedqa.load_rows(path or SITUATEDQA_DEV)
    kept, ids = [], set()
    for row in rows:
        qid = str(row.get("id"))
        if half_of(qid) != split:
            continue
        if limit is not None and qid not in ids and len(ids) >= limit:
            break
        ids.add(qid)
        kept.append(row)
    return kept


def split_keys(keys: Sequence[str], split: str) -> list[str]:
    """The keys of one half (for sets keyed by something else, e.g. the decisions set's teams)."""
    _check(split)
    return [k for k in keys if half_of(k) == split]
