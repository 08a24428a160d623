"""Convert real TimeQA pages into a HiCoMER dataset (stream, questions, gold, memories).

Why: the generator's world is synthetic; TimeQA (``../shared/data/timeqa-train/``) holds
real facts that change over time (owners, office holders, clubs, ...), so a stream built
from it tests validity over time on text nobody on the project wrote.

What the file holds: a list of pages ``{index, type, link, paras, questions}``; each
question is ``[question, [{para, from, end, answer}]]`` where ``from``/``end`` are
*character offsets* of the answer span in ``paras[para]``. The time a question is about
is only in its wording ("... from 1811 to 1827?", "... in May 2016?"), so it is parsed
from the question text (:func:`parse_period`).

How pages become timelines (:mod:`.facts` builds the dataset from them, as for every
real source):

* **A page is one subject.** TimeQA's ``index`` is ``/wiki/<entity>#<Wikidata property>``
  and its questions are mostly paraphrases of that one attribute ("Who owned X ...",
  "X was owned by whom ..."), so the page is one timeline; each answered question gives a
  value starting at its period's start (the period's end is not used: the next value
  ends it). ``split_questions=True`` keys timelines by page and plain question instead.
* **Each record keeps its own wording**: the question without its time phrase
  (:func:`plain_question`), so paraphrases reach the stream; the most frequent wording
  is the subject's "now" question.
* **The source's own question, with its period, is an as-of question** at the period's
  start.
* ``--split train|val`` keeps the pages whose index hashes into ~80% / ~20%, so a model
  trained on one part can be checked on pages it never saw.

Questions that cannot be converted are skipped and counted by reason (no answer, no
date found in the wording, a date that does not exist, a range that ends before it
starts, a malformed record); pages without a convertible question are skipped too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import string
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from memgraft.collab.data import Dataset, write_converted
from memgraft.collab.data.facts import Timeline, build
from memgraft.collab.data.wikidata import attribute_of

DEFAULT_INPUT = Path(__file__).resolve().parents[4] / "shared" / "data" / "timeqa-train" / "human_annotated_train.json"
AUTHOR = "wikipedia"
SPLITS = ("train", "val", "all")

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MON = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_MONTH_DATE = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?{_MON}\.?(?:\s+\d{{1,2}}(?:st|nd|rd|th)?,?)?\s+\d{{1,4}}\b"
_ANY_DATE = rf"(?:{_MONTH_DATE}|\b\d{{1,4}}\b)"  # after "from"/"between", short years are meant
_FULL_DATE = rf"(?:{_MONTH_DATE}|\b\d{{3,4}}\b)"  # elsewhere a lone number must look like a year
_SEASON = rf"{_FULL_DATE}(?:/\d{{2,4}})?"  # "2018/2019"
_TO = r"\s*(?:to|until|till|through|thru|-|–)\s*"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("from", re.compile(rf"\bfrom\s+(?:the\s+years?\s+)?({_ANY_DATE}){_TO}({_ANY_DATE})", re.I)),
    ("between", re.compile(rf"\bbetween\s+(?:the\s+years?\s+)?({_ANY_DATE})\s+and\s+({_ANY_DATE})", re.I)),
    ("range", re.compile(rf"({_FULL_DATE}){_TO}({_FULL_DATE})", re.I)),
    ("at", re.compile(rf"\b(?:in|during|since|after|on|as\s+of)\s+(?:the\s+(?:year|season)\s+)?({_SEASON})", re.I)),
    ("date", re.compile(rf"({_MONTH_DATE})", re.I)),
    ("year", re.compile(r"\b(\d{4})\b")),
)


class BadDate(ValueError):
    """A date phrase was found but names no real day (month 13, year 0, ...)."""


@dataclass(frozen=True)
class Period:
    """The time a question asks about, as ISO times; ``end`` is None for a single point
    or an open start ("since 2019"). ``span`` is where the phrase sits in the question."""

    start: str
    end: str | None
    text: str
    span: tuple[int, int]


def parse_date(text: str) -> str:
    """``"1811"``, ``"Feb 2016"``, ``"May 6, 1944"``, ``"5 december 2016"`` -> ISO time at
    the start of the named year, month or day (``"1811-01-01T00:00:00"``)."""
    words = re.findall(r"[a-z]+|\d+", text.lower())
    month = next((_MONTHS[w[:3]] for w in words if w[:3] in _MONTHS and not w.isdigit()), None)
    numbers = [int(w) for w in words if w.isdigit()]
    if not numbers:
        raise BadDate(text)
    year = numbers[-1]  # "2018/2019" (a season) -> 2019
    day = numbers[0] if month is not None and len(numbers) > 1 else 1
    try:
        when = datetime(year, month or 1, day)
    except ValueError as exc:  # year 0, day 31 in a 30-day month, ...
        raise BadDate(text) from exc
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d}T00:00:00"


def parse_period(question: str) -> Period | None:
    """The first pattern that matches wins: an explicit "from A to B", "between A and B",
    a bare "A to B", then a single date after in/during/since/after/on, then any date
    with a month, then any four-digit year (the last one in the question). None when the
    question names no time; :class:`BadDate` when it names an impossible one."""
    for kind, pattern in _PATTERNS:
        matches = list(pattern.finditer(question))
        if not matches:
            continue
        m = matches[0] if pattern.groups == 2 else matches[-1]
        start = parse_date(m.group(1))
        end = parse_date(m.group(2)) if pattern.groups == 2 else None
        return Period(start, end, m.group(0), m.span())
    return None


def detokenize(text: str) -> str:
    """TimeQA's answers are space-tokenised ("John F . Kennedy , Jr ."): rejoin punctuation."""
    text = re.sub(r"\s+([.,;:!?)\]%'])", r"\1", " ".join(text.split()))
    return re.sub(r"([(\[])\s+", r"\1", text)


_FILLER = re.compile(  # what is left of a time phrase once its dates are cut out
    r"\b(?:in|during|for|over)\s+the\s+(?:stretch|span|course)\s+of\s+(?:time|years?|months)\b"
    r"|\b(?:in|during|for|over)\s+the\s+(?:time\s+period|period\s+of\s+time|time\s*frame|period|years?|months)\b"
    r"(?!\s+(?:of|when|that)\b)"
    r"|\bspanning\s+the\s+(?:months|years)\b|\b(?:the\s+)?time\s*frame\b",
    re.I,
)


def plain_question(question: str, period: Period) -> str:
    """The question without its time phrase: "Who ran X from 1990 to 2000?" -> "Who ran X?"."""
    a, b = period.span
    q = question[:a] + " " + question[b:]
    q = _FILLER.sub(" ", q)
    q = re.sub(r"\s+([?,.])", r"\1", " ".join(q.split()))
    q = re.sub(r"^[,\s]+|,(?=[?.])", "", q).strip()
    if q and q[-1] not in "?.":
        q += "?"
    return q[:1].upper() + q[1:]


def statement(question: str, period: Period, answers: Sequence[str]) -> str:
    """The question without its time phrase, then the answer (the first record phrasing)."""
    return f"{plain_question(question, period)} {' and '.join(answers)}."


def _question_key(plain: str) -> str:
    return " ".join(plain.lower().translate(str.maketrans("", "", string.punctuation)).split())


def split_of(page: dict[str, Any], number: int) -> str:
    """"train" or "val", about 80/20, by a hash of the page's index: stable across runs."""
    key = str(page.get("index", number)) if isinstance(page, dict) else str(number)
    return "val" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % 5 == 0 else "train"


def select_split(pages: Sequence[dict[str, Any]], split: str = "all") -> list[dict[str, Any]]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return [p for n, p in enumerate(pages) if split == "all" or split_of(p, n) == split]


@dataclass
class _Fact:
    question: str
    plain: str
    period: Period
    answers: list[str]


class Converter:
    """Turns pages into timelines, counting what it skips. A page (TimeQA's ``index``,
    ``/wiki/<entity>#<Wikidata property>``) is one subject-attribute: its questions are
    mostly paraphrases of one attribute, so by default the page is one timeline;
    ``split_questions`` makes each distinct plain question its own timeline instead."""

    def __init__(self, split_questions: bool = False) -> None:
        self.timelines: list[Timeline] = []
        self.counts: Counter[str] = Counter()
        self.split_questions = split_questions

    def page(self, number: int, page: dict[str, Any]) -> None:
        self.counts["pages"] += 1
        records = page.get("questions") if isinstance(page, dict) else None
        if not isinstance(records, list):
            self.counts["pages_malformed"] += 1
            return
        facts = [f for f in (self._fact(r) for r in records) if f is not None]
        self.counts["questions"] += len(records)
        self.counts["questions_converted"] += len(facts)
        if not facts:
            self.counts["pages_without_questions"] += 1
            return
        index = str(page.get("index", number))
        link = str(page.get("link") or index.split("#")[0])
        name = link.rsplit("/", 1)[-1].replace("_", " ")
        by_key: dict[str, list[_Fact]] = {}
        for f in facts:
            by_key.setdefault(_question_key(f.plain) if self.split_questions else "", []).append(f)
        for key, group in by_key.items():
            plains = Counter(f.plain for f in group)
            wording: dict[str, str] = {}
            for f in group:
                wording.setdefault(f.period.start, f.plain)
            self.timelines.append(
                Timeline(
                    subject=f"{index}|{key}" if key else index,
                    question=max(plains, key=lambda q: (plains[q], -list(plains).index(q))),
                    values=[(f.period.start, f.answers) for f in group],
                    asked=[(f.question, f.period.start, f.answers) for f in group],
                    name=name, wording=wording,
                    extra={"page": index, **({"attribute": attr} if (attr := attribute_of(index)) else {})},
                )
            )  # fmt: skip
        self.counts["pages_converted"] += 1

    def _fact(self, record: Any) -> _Fact | None:
        try:
            question, spans = str(record[0]), list(record[1])
            answers = [detokenize(str(s["answer"])) for s in spans if str(s.get("answer", "")).strip()]
        except (IndexError, KeyError, TypeError, AttributeError):
            self.counts["skipped_malformed"] += 1
            return None
        if not answers:
            self.counts["skipped_no_answer"] += 1
            return None
        try:
            period = parse_period(question)
        except BadDate:
            self.counts["skipped_bad_date"] += 1
            return None
        if period is None:
            self.counts["skipped_no_date"] += 1
            return None
        if period.end is not None and period.end < period.start:
            self.counts["skipped_bad_range"] += 1
            return None
        return _Fact(question, plain_question(question, period), period, list(dict.fromkeys(answers)))


def convert(
    pages: Sequence[dict[str, Any]],
    source: str = "timeqa",
    *,
    subjects_per_team: int = 40,
    seed: int = 0,
    split_questions: bool = False,
    one_wording: bool = False,
    **options: Any,
) -> tuple[Dataset, dict[str, int]]:
    """Convert TimeQA pages (:func:`memgraft.collab.data.facts.build` takes ``options``);
    returns the dataset and the conversion counts. ``one_wording``: every record of a
    subject from its one most common question, not each period's own paraphrase (the
    shape of a stream whose records name their subject the same way every time)."""
    conv = Converter(split_questions)
    for number, page in enumerate(pages):
        conv.page(number, page)
    if one_wording:
        for line in conv.timelines:
            line.wording = {}
    data = build(conv.timelines, source=source, author=AUTHOR, subjects_per_team=subjects_per_team,
                 seed=seed, counts=dict(conv.counts), **options)  # fmt: skip
    return data, dict(data.info["counts"])


def load_pages(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        pages = json.load(fh)
    if not isinstance(pages, list):
        raise ValueError(f"{path}: expected a list of pages, got {type(pages).__name__}")
    return pages[:limit] if limit is not None else pages


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memgraft.collab.data.timeqa", description=__doc__.split("\n")[0])
    p.add_argument("--input", type=Path, default=DEFAULT_INPUT, help="TimeQA JSON (a list of pages)")
    p.add_argument("--out", required=True, type=Path, help="folder for stream/questions/gold/memories .jsonl")
    p.add_argument("--limit", type=int, default=None, help="convert only the first N pages")
    p.add_argument("--subjects-per-team", type=int, default=40, help="subjects per team (0: one team)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", choices=SPLITS, default="all", help="pages by a hash of their index, ~80/20")
    p.add_argument("--one-wording", action="store_true", help="each subject's records from its one main question")
    a = p.parse_args(argv)
    pages = select_split(load_pages(a.input, a.limit), a.split)
    data, counts = convert(pages, subjects_per_team=a.subjects_per_team, seed=a.seed, one_wording=a.one_wording)
    data.info.update(input=str(a.input), split=a.split)
    write_converted(data, a.out, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
