"""Timelines of real facts -> a HiCoMER dataset, the same way for every source.

Why: a judge trained on one source's template learns the template, not validity. Every
real source (TimeQA, SituatedQA, ...) is reduced to :class:`Timeline` s (a subject, its
plain question, the dated answers it took) and this module builds the dataset, so all
sources share one shape, the shape of the reviewers' held-out stream:

* **Many subjects share a team** (``subjects_per_team``, shuffled by seed), so records
  about *other* subjects with the same attribute ("the owner of The Fifer ..." next to
  "the owner of Arnolfini Portrait ...") sit side by side and must not be confused.
* **One group per distinct start time** within a team, holding every record starting then.
  A record is a team memory (kind ``fact``) rendered in one of several phrasings chosen by
  seed; only some phrasings carry the year (the memory's time carries it anyway).
* In a group that brings a new value, an **individual stale note** still reports the old
  value: intra contradiction/revise against the subject's new record, outdated at birth
  (the generator's same-time convention: the group's team memory wins). Some groups also
  get a **confirming note** restating the new value (intra compatible/keep).
* **Inter gold**: every earlier valid memory of the subject is contradiction/revise when
  its value differs, compatible/keep when it is the same; plus neutral/keep on up to
  ``neutrals`` valid memories of the most alike *other* subjects (hard negatives).
* **Questions**: per subject the plain question "now" (the team's last group time), and
  the source's own as-of questions, skipped and counted when the source's answer
  disagrees with the timeline or is asked before the subject's first record.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from memgraft.collab.data import Dataset, Ledger, MemoryState

Asked = tuple[str, str, list[str]]  # (question as the source words it, ISO as-of time, its answers)


@dataclass
class Timeline:
    """One subject's dated answers. ``values``: (ISO start time, answers), each holding
    until the next start. ``wording`` optionally gives the plain question a source used for
    the value starting at a time (paraphrases); ``name`` is the entity, removed from the
    question when comparing attributes across subjects."""

    subject: str
    question: str
    values: list[tuple[str, list[str]]]
    asked: list[Asked] = field(default_factory=list)
    name: str = ""
    wording: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def answer_key(answers: Sequence[str]) -> frozenset[str]:
    """Answers compared without case, punctuation or spacing."""
    table = str.maketrans("", "", string.punctuation)
    return frozenset(" ".join(a.lower().translate(table).split()) for a in answers)


def normalise_values(values: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
    """Sort by time, join answers given for one start, merge consecutive equal answer sets."""
    by_start: dict[str, list[str]] = {}
    for start, answers in sorted(values, key=lambda v: v[0]):
        known = by_start.setdefault(start, [])
        known += [a for a in answers if answer_key([a]) - answer_key(known)]
    out: list[tuple[str, list[str]]] = []
    for start, answers in by_start.items():
        if answers and (not out or answer_key(out[-1][1]) != answer_key(answers)):
            out.append((start, answers))
    return out


# -- phrasing ----------------------------------------------------------------------------

_DECL = re.compile(r"^(who|what|which|where|when)\s+(is|was|are|were)\s+(.+?)\s*\??$", re.I)
_NOT_NP_END = {"held", "built", "born", "made", "known", "called", "named", "written", "sung", "played",
               "won", "given", "shown", "run", "located", "in", "on", "for", "of", "to", "with", "at",
               "by", "from", "as", "do", "it", "them", "him", "her"}  # fmt: skip


@dataclass(frozen=True)
class Phrase:
    """What a template may use: the question, its noun phrase and verb when it has the
    shape ``wh-word + be + noun phrase``, the value and the year."""

    question: str
    np: str | None
    be: str | None
    value: str
    year: str
    attribute: str | None = None  # "owner", "sports team": when the source names the attribute
    name: str | None = None  # the subject's name ("The Fifer")

    @classmethod
    def of(cls, question: str, value: str, time: str, attribute: str | None = None,
           name: str | None = None) -> "Phrase":
        q = " ".join(question.split()).rstrip(" ?.")
        q = (q[:1].upper() + q[1:] + "?") if q else "?"
        m = _DECL.match(q)
        np = be = None
        if m and m.group(3).split()[-1].lower().strip(string.punctuation) not in _NOT_NP_END:
            if not m.group(3).lower().endswith("ed"):
                np, be = m.group(3), m.group(2).lower()
        return cls(q, np, be, value, str(int(time[:4])), attribute or None, name or None)

    def statement(self) -> str:
        """"The president of india is Ram Nath Kovind." or, lacking the shape, Q + A."""
        if self.np:
            return f"{self.np[:1].upper()}{self.np[1:]} {self.be} {self.value}."
        return f"{self.question} {self.value}."

    def label(self) -> str:
        """"President of india" (the noun phrase without its article) or the question."""
        if not self.np:
            return self.question.rstrip("?")
        np = re.sub(r"^(the|a|an)\s+", "", self.np, flags=re.I)
        return np[:1].upper() + np[1:]

    def about(self) -> str:
        return self.np if self.np else f'"{self.question}"'

    def of_subject(self) -> str:
        """"the owner of The Fifer" where the source names the attribute and the subject, else the statement's."""
        if self.attribute and self.name:
            return f"the {self.attribute} of {self.name}"
        return _lower_article(self.np) if self.np else self.question.rstrip("?")

    def attribute_statement(self) -> str:
        """"The owner of The Fifer is Durand-Ruel." when named, else :meth:`statement`."""
        if self.attribute and self.name:
            return f"The {self.attribute} of {self.name} is {self.value}."
        return self.statement()


Template = Callable[[Phrase], str]


def _lower_article(text: str) -> str:
    """"The owner ..." -> "the owner ..." after a prefix; a proper noun keeps its capital."""
    return re.sub(r"^(The|A|An)\b", lambda m: m.group(1).lower(), text)

RECORDS: tuple[Template, ...] = (
    lambda p: f"{p.question} {p.value}.",
    lambda p: f"Q: {p.question} A: {p.value}",
    lambda p: p.statement(),
    lambda p: f"Record from {p.year}: {p.statement()}",
    lambda p: f"As of {p.year}, {_lower_article(p.statement())}",
    lambda p: f"{p.label()}: {p.value}",
    lambda p: p.attribute_statement(),
    lambda p: f"Record from {p.year}: {_lower_article(p.attribute_statement())}",
)
_NOTES: tuple[Template, ...] = (
    lambda p: f"Checked again: {p.statement()}",
    lambda p: f"Note: my sheet lists {p.about()} as {p.value}.",
    lambda p: f"Log: {p.question} — {p.value}",
    lambda p: f"From my notes: {p.label()} = {p.value}",
    lambda p: f"Note: {p.of_subject()} is {p.value}, as far as I know.",
)
STALE_NOTES: tuple[Template, ...] = _NOTES + (
    lambda p: f"Note: my sheet still lists {p.about()} as {p.value}.",
    lambda p: f"Log: {p.question} — still {p.value}",
    lambda p: f"Observation: {p.of_subject()} is still {p.value}.",
)
CONFIRM_NOTES: tuple[Template, ...] = _NOTES + (
    lambda p: f"Confirmed: {p.statement()}",
    lambda p: f"Log: {p.question} — now {p.value}",
)
_STOP = {"the", "a", "an", "of", "in", "on", "to", "for", "and", "did", "does", "do"}


def render(phrase: dict[str, Any], template: Template) -> str:
    """A memory's text again, from its stored phrase fields, in ``template``."""
    return template(Phrase.of(phrase["question"], phrase["value"], phrase["time"], phrase.get("attribute"),
                              phrase.get("name")))


def template_words(question: str, name: str) -> frozenset[str]:
    """The question's words less the entity's: what says which attribute is asked."""
    words = lambda s: set(re.findall(r"[a-z0-9]+", s.lower()))  # noqa: E731
    return frozenset(words(question) - words(name) - _STOP)


def _alike(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


# -- building ----------------------------------------------------------------------------


@dataclass
class _Subject:
    line: Timeline
    values: list[tuple[str, list[str]]]
    words: frozenset[str]
    memories: list[MemoryState] = field(default_factory=list)
    alike: list["_Subject"] | None = None

    def wording(self, start: str) -> str:
        return self.line.wording.get(start, self.line.question)


class _Builder:
    def __init__(self, source: str, author: str, seed: int, stale_notes: bool, confirm_notes: float,
                 neutrals: int, counts: Counter[str]) -> None:  # fmt: skip
        self.ledger, self.questions, self.counts = Ledger(), [], counts
        self.rng = random.Random(f"{source}:{seed}")
        self.author, self.stale, self.confirm, self.neutrals = author, stale_notes, confirm_notes, neutrals
        self.asked: Counter[str] = Counter()

    def memory(self, gid: str, team: str, time: str, s: _Subject, answers: list[str], role: str) -> MemoryState:
        value = " and ".join(answers)
        phrase = Phrase.of(s.wording(time), value, time, s.line.extra.get("attribute"), s.line.name)
        templates = {"record": RECORDS, "stale": STALE_NOTES, "confirm": CONFIRM_NOTES}[role]
        team_mem = role == "record"
        m = MemoryState(
            memory_id="", team=team, group_id=gid, time=time, type="team" if team_mem else "individual",
            author=self.author if team_mem else f"agent-{self.rng.randint(1, 6)}",
            content=self.rng.choice(templates)(phrase), kind="fact" if team_mem else "observation",
            topic=s.line.subject, value=value,
            extra={"subject": s.line.subject, "answers": list(answers), "role": role, **s.line.extra,
                   # what the text was rendered from, so training can re-render it in another phrasing
                   "phrase": {"question": s.wording(time), "value": value, "time": time,
                              "attribute": s.line.extra.get("attribute"), "name": s.line.name or None}},
        )  # fmt: skip
        s.memories.append(m)
        self.counts[f"{role}_memories"] += 1
        return m

    def team(self, team: str, subjects: list[_Subject]) -> None:
        starts = sorted({t for s in subjects for t, _ in s.values})
        for g, t in enumerate(starts):
            gid = f"{team}-g{g:03d}"
            earlier = [m for m in self.ledger.team_states(team) if m.outdated_at is None]
            new: list[tuple[_Subject, MemoryState]] = []
            notes: list[tuple[MemoryState, MemoryState, str]] = []  # (note, its record, relation)
            for s in subjects:
                i = next((k for k, (start, _) in enumerate(s.values) if start == t), None)
                if i is None:
                    continue
                record = self.memory(gid, team, t, s, s.values[i][1], "record")
                new.append((s, record))
                if self.stale and i > 0:
                    notes.append((self.memory(gid, team, t, s, s.values[i - 1][1], "stale"), record, "contradiction"))
                if self.rng.random() < self.confirm:
                    notes.append((self.memory(gid, team, t, s, s.values[i][1], "confirm"), record, "compatible"))
            group = [m for _, m in new] + [n for n, _, _ in notes]
            self.rng.shuffle(group)
            for k, m in enumerate(group, start=1):
                m.memory_id = f"{gid}-m{k:02d}"
            self.ledger.add_group(team, gid, t, group)
            for note, record, relation in notes:
                action = "revise" if relation == "contradiction" else "keep"
                self.ledger.decide(note.memory_id, gid, t, "intra", [record.memory_id], relation, action, record.memory_id)
            self._inter(gid, t, earlier, new, subjects)

    def _inter(self, gid: str, t: str, earlier: list[MemoryState], new: list[tuple[_Subject, MemoryState]],
               subjects: list[_Subject]) -> None:  # fmt: skip
        judged: set[str] = set()
        open_ids = {m.memory_id for m in earlier}
        for s, record in new:
            key = answer_key(record.extra["answers"])
            for old in [m for m in earlier if m.topic == s.line.subject]:
                same = answer_key(old.extra["answers"]) == key
                rel, act = ("compatible", "keep") if same else ("contradiction", "revise")
                self.ledger.decide(old.memory_id, gid, t, "inter", [record.memory_id], rel, act, record.memory_id)
                judged.add(old.memory_id)
                self.counts["superseded" if not same else "inter_compatible"] += 1
        for s, record in new:
            if s.alike is None:  # most alike other subjects first; computed once per subject
                # the same named attribute first (another painting's owner), then the most alike question
                attr = s.line.extra.get("attribute")
                s.alike = sorted((o for o in subjects if o is not s),
                                 key=lambda o: (not (attr and o.line.extra.get("attribute") == attr),
                                                -_alike(s.words, o.words)))
            picked = 0
            for o in s.alike:
                for m in o.memories:
                    if picked < self.neutrals and m.memory_id in open_ids and m.memory_id not in judged:
                        self.ledger.decide(m.memory_id, gid, t, "inter", [record.memory_id], "neutral", "keep")
                        judged.add(m.memory_id)
                        picked += 1
                        self.counts["inter_neutral"] += 1
                if picked >= self.neutrals:
                    break

    def ask(self, team: str, subjects: list[_Subject], last: str) -> None:
        for s in subjects:
            current = s.values[-1][1]
            self._question(team, s, s.line.question, last, current, "now")
            first = s.values[0][0]
            for text, t, answers in s.line.asked:
                if t < first:
                    self.counts["asof_skipped_before_first_record"] += 1
                    continue
                held = [a for start, a in s.values if start <= t][-1]
                if not answer_key(answers) <= answer_key(held):
                    self.counts["asof_skipped_answer_disagrees"] += 1
                    continue
                self._question(team, s, text, t, held, "as_of")

    def _question(self, team: str, s: _Subject, text: str, t: str, answers: list[str], asked: str) -> None:
        self.asked[team] += 1
        n = self.asked[team]
        self.questions.append({
            "id": f"{team}-q{n:05d}", "team": team, "question": text, "time": t,
            "valid": [m.memory_id for m in s.memories if m.valid_at(t)],
            "outdated": [m.memory_id for m in s.memories if m.outdated_by(t)],
            "answer": " and ".join(answers), "qtype": "fact_lookup", "asked": asked,
            "answers": list(answers), "subject": s.line.subject,
        })  # fmt: skip
        self.counts[f"questions_{asked}"] += 1


def build(
    timelines: Sequence[Timeline],
    *,
    source: str,
    author: str = "source",
    subjects_per_team: int = 40,
    seed: int = 0,
    stale_notes: bool = True,
    confirm_notes: float = 0.3,
    neutrals: int = 3,
    counts: dict[str, int] | None = None,
) -> Dataset:
    """Build the dataset; ``counts`` (the source's own) are merged into ``info["counts"]``."""
    tally: Counter[str] = Counter(counts or {})
    b = _Builder(source, author, seed, stale_notes, confirm_notes, neutrals, tally)
    subjects, seen = [], set()
    for line in timelines:
        values = normalise_values(line.values)
        if not values or line.subject in seen:
            tally["subjects_skipped_empty_or_duplicate"] += 1
            continue
        seen.add(line.subject)
        subjects.append(_Subject(line, values, template_words(line.question, line.name)))
    b.rng.shuffle(subjects)
    size = subjects_per_team if subjects_per_team > 0 else max(1, len(subjects))
    for n, first in enumerate(range(0, len(subjects), size)):
        team, members = f"{source}-{n:02d}", subjects[first : first + size]
        b.team(team, members)
        b.ask(team, members, max(t for s in members for t, _ in s.values))
    tally["subjects"] = len(subjects)
    tally["changing_subjects"] = sum(len(s.values) > 1 for s in subjects)
    data = b.ledger.dataset(b.questions, info={"source": source})
    tally.update({k: data.counts()[k] for k in ("teams", "groups", "memories")})
    data.info["counts"] = {k: tally[k] for k in sorted(tally)}
    return data
