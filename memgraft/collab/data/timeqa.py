"""Convert real TimeQA pages into a HiCoMER dataset (stream, questions, gold, memories).

Why: the generator's world is synthetic; TimeQA (``../shared/data/timeqa-train/``) holds
real facts that change over time (owners, office holders, clubs, ...), so a stream built
from it tests validity over time on text nobody on the project wrote.

What the file holds: a list of pages ``{index, type, link, paras, questions}``; each
question is ``[question, [{para, from, end, answer}]]`` where ``from``/``end`` are
*character offsets* of the answer span in ``paras[para]``. The time a question is about
is only in its wording ("... from 1811 to 1827?", "... in May 2016?"), so it is parsed
from the question text (:func:`parse_period`).

How a page becomes a team (``timeqa-<page number>``), with these choices:

* **Facts are team memories.** Each answered question is a fact "during this period, the
  answer was X"; its memory is written at the start of the period, by author
  ``wikipedia``, with the question's time phrase removed and the answer appended (the
  date is left out of the text on purpose: the memory's time carries it, and telling
  eras apart is the validity scorer's job). Questions that give the same period start
  and the same answers (paraphrases) share one memory. There are no individual
  memories: TimeQA has no personal logs, and inventing some would add labels nobody
  annotated.
* **One group per distinct start time**, in time order.
* **Later facts supersede earlier ones**: when a group is applied, every earlier valid
  memory of the page whose answers differ from all of the group's is outdated by it
  (relation contradiction, action revise, level inter); one with the same answers is
  compatible and kept.
* **Questions** are asked as of their period's start: ``valid`` is the memory written
  then with the asked answers (and any still-valid memory with the same answers),
  ``outdated`` every memory of the page already superseded at that time.

Questions that cannot be converted are skipped and counted by reason (no answer, no
date found in the wording, a date that does not exist, a range that ends before it
starts, a malformed record); pages without a convertible question are skipped too.
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from memgraft.collab.data import Dataset, Ledger, MemoryState, Row

DEFAULT_INPUT = Path(__file__).resolve().parents[4] / "shared" / "data" / "timeqa-train" / "human_annotated_train.json"
AUTHOR = "wikipedia"

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


def statement(question: str, period: Period, answers: Sequence[str]) -> str:
    """The memory text: the question without its time phrase, then the answer."""
    a, b = period.span
    q = question[:a] + " " + question[b:]
    q = _FILLER.sub(" ", q)
    q = re.sub(r"\s+([?,.])", r"\1", " ".join(q.split()))
    q = re.sub(r"^[,\s]+|,(?=[?.])", "", q).strip()
    if q and q[-1] not in "?.":
        q += "?"
    if q:
        q = q[0].upper() + q[1:]
    return f"{q} {' and '.join(answers)}."


def _answer_key(answers: Iterable[str]) -> tuple[str, ...]:
    table = str.maketrans("", "", string.punctuation)
    return tuple(sorted({" ".join(a.lower().translate(table).split()) for a in answers}))


@dataclass
class _Fact:
    start: str
    period: Period
    answers: list[str]
    text: str
    evidence: str | None
    questions: list[tuple[str, Period]]
    memory: MemoryState | None = None


def _evidence(paras: Sequence[str], span: dict[str, Any]) -> str | None:
    """The sentence of the paragraph holding the answer span (for the memories file only)."""
    try:
        para = paras[int(span["para"])]
        start, end = int(span["from"]), int(span["end"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    left = para.rfind(" . ", 0, start)
    right = para.find(" . ", end)
    sentence = para[left + 3 if left >= 0 else 0 : right + 2 if right >= 0 else len(para)]
    return detokenize(sentence)


class Converter:
    """Converts pages one by one into a shared ledger, counting what it skips."""

    def __init__(self) -> None:
        self.ledger = Ledger()
        self.questions: list[Row] = []
        self.counts: Counter[str] = Counter()

    def page(self, number: int, page: dict[str, Any]) -> None:
        self.counts["pages"] += 1
        records = page.get("questions") if isinstance(page, dict) else None
        if not isinstance(records, list):
            self.counts["pages_malformed"] += 1
            return
        paras = page.get("paras") or []
        facts: dict[tuple[str, tuple[str, ...]], _Fact] = {}
        for record in records:
            self.counts["questions"] += 1
            fact = self._fact(record, paras)
            if fact is None:
                continue
            key = (fact.start, _answer_key(fact.answers))
            if key in facts:
                facts[key].questions.extend(fact.questions)
                self.counts["questions_sharing_a_memory"] += 1
            else:
                facts[key] = fact
        if not facts:
            self.counts["pages_without_questions"] += 1
            return
        self._page_stream(f"timeqa-{number:03d}", str(page.get("index", number)), list(facts.values()))
        self.counts["pages_converted"] += 1

    def _fact(self, record: Any, paras: Sequence[str]) -> _Fact | None:
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
        answers = list(dict.fromkeys(answers))
        return _Fact(
            start=period.start,
            period=period,
            answers=answers,
            text=statement(question, period, answers),
            evidence=_evidence(paras, spans[0]) if spans else None,
            questions=[(question, period)],
        )

    def _page_stream(self, team: str, page_index: str, facts: list[_Fact]) -> None:
        starts = sorted({f.start for f in facts})
        for g, start in enumerate(starts):
            gid = f"{team}-g{g:03d}"
            group = [f for f in facts if f.start == start]
            earlier = [m for m in self.ledger.team_states(team) if m.outdated_at is None]
            for k, fact in enumerate(group, start=1):
                fact.memory = MemoryState(
                    memory_id=f"{gid}-m{k:02d}", team=team, group_id=gid, time=start, type="team",
                    author=AUTHOR, content=fact.text, kind="fact", topic=page_index, value=" and ".join(fact.answers),
                    extra={"page": page_index, "answers": fact.answers, "evidence": fact.evidence},
                )  # fmt: skip
            mems = [f.memory for f in group if f.memory is not None]
            self.ledger.add_group(team, gid, start, mems)
            self.counts["groups"] += 1
            self.counts["memories"] += len(mems)
            by_key = {_answer_key(f.answers): f.memory for f in group}
            for old in earlier:
                same = by_key.get(_answer_key(old.extra["answers"]))
                if same is not None:
                    self.ledger.decide(old.memory_id, gid, start, "inter", [same.memory_id], "compatible", "keep")
                else:
                    ids = [m.memory_id for m in mems]
                    self.ledger.decide(old.memory_id, gid, start, "inter", ids, "contradiction", "revise", ids[0])
                    self.counts["superseded"] += 1
        states = self.ledger.team_states(team)
        asked = 0
        for fact in facts:
            assert fact.memory is not None
            key = _answer_key(fact.answers)
            t = fact.start
            valid = [fact.memory.memory_id] + [
                m.memory_id
                for m in states
                if m is not fact.memory and m.valid_at(t) and _answer_key(m.extra["answers"]) == key
            ]
            outdated = [m.memory_id for m in states if m.outdated_by(t)]
            for question, period in fact.questions:
                asked += 1
                self.questions.append(
                    {
                        "id": f"{team}-q{asked:03d}",
                        "team": team,
                        "question": question,
                        "time": t,
                        "valid": valid,
                        "outdated": outdated,
                        "answer": " and ".join(fact.answers),
                        "qtype": "fact_lookup",
                        "answers": fact.answers,
                        "page": page_index,
                        "period": {"text": period.text, "from": period.start, "to": period.end},
                    }
                )
                self.counts["questions_converted"] += 1

    def dataset(self, source: str) -> Dataset:
        counts = {k: self.counts[k] for k in sorted(self.counts)}
        return self.ledger.dataset(self.questions, info={"source": source, "counts": counts})


def convert(pages: Sequence[dict[str, Any]], source: str = "timeqa") -> tuple[Dataset, dict[str, int]]:
    """Convert TimeQA pages; returns the dataset and the conversion counts."""
    conv = Converter()
    for number, page in enumerate(pages):
        conv.page(number, page)
    data = conv.dataset(source)
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
    a = p.parse_args(argv)
    data, counts = convert(load_pages(a.input, a.limit), source=str(a.input))
    paths = data.write(a.out)
    (a.out / "report.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"counts": counts, "files": {k: str(v) for k, v in paths.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
