"""Rewordings of a built real-data dataset: prose records, informal notes, typos and shortened names.

Why: the converters' records come from a handful of templates (:mod:`.facts`), and parts of
the updater read those templates' words (openers such as "A:", "=", "is"; "still"; ", as
far as I know"). A held-out stream is written by people: the date sits inside the
sentence, the value is not always last, a note says "I'd go with X for Y tbh", a name has
a typo or is cut to a surname. These functions rewrite every memory of a dataset built by
:func:`memgraft.collab.data.facts.build` from its stored phrase fields (the question, the
value, the time, the attribute and the subject's name), chosen by seed, and carry the new
words into the stream, the gold decisions and ``memories.jsonl``, so the gold is the
original's: the same subjects, values and times, only other words.

None of the prose or informal templates below uses an opener of :mod:`.facts`' templates
("Q:", "A:", "=", "Record from", "As of", "Note:", "Log:", "Checked again", "Confirmed:",
"still", ", as far as I know") nor " is " of its own.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from memgraft.collab.data import Dataset, Row, revised_text
from memgraft.collab.data.facts import Phrase

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")  # fmt: skip


@dataclass(frozen=True)
class Prose:
    """What a prose template may use. ``what``: "the head coach of Calcio Catania" where the
    source names an attribute or the question has a noun phrase, else None; ``ask``: the
    question in lower case without its mark; ``when``: "March 1998" or "1998"."""

    what: str | None
    ask: str
    value: str
    when: str

    @property
    def ref(self) -> str:
        """How a note refers to what is asked."""
        return self.what or f"'{self.ask}'"

    @classmethod
    def of(cls, phrase: Row) -> "Prose":
        p = Phrase.of(phrase["question"], phrase["value"], phrase["time"], phrase.get("attribute"), phrase.get("name"))
        what = None
        if p.attribute and p.name:
            what = f"the {p.attribute} of {p.name}"
        elif p.np:
            what = p.np if p.np[:1].isupper() and not re.match(r"^(The|A|An)\b", p.np) else p.np[:1].lower() + p.np[1:]
        ask = p.question.rstrip("?").strip()
        ask = ask[:1].lower() + ask[1:]
        t = phrase["time"]
        when = t[:4].lstrip("0") if t[5:10] == "01-01" else f"{_MONTHS[int(t[5:7]) - 1]} {t[:4].lstrip('0')}"
        return cls(what, ask, str(phrase["value"]), when)


ProseTemplate = Callable[[Prose], str]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# Records about a named attribute or a noun phrase: the date inside, the value anywhere.
NAMED_RECORDS: tuple[ProseTemplate, ...] = (
    lambda p: f"In {p.when} {p.what} went to {p.value}.",
    lambda p: f"{p.value} took over {p.what} in {p.when}, per the archive.",
    lambda p: f"Since {p.when}, {p.value} has held {p.what}.",
    lambda p: f"{_cap(p.what)} changed hands in {p.when}; {p.value} took it from there.",
    lambda p: f"Starting in {p.when}, the records give {p.value} for {p.what}.",
    lambda p: f"{p.value} became {p.what} in {p.when} and kept it for a while.",
    lambda p: f"We have {p.value} down for {p.what} from {p.when} on.",
    lambda p: f"From {p.when} onward {p.what} belonged to {p.value}, according to the archive.",
    lambda p: f"{_cap(p.what)} passed to {p.value} in {p.when}.",
    lambda p: f"The {p.when} entry puts {p.value} in place for {p.what}.",
)
# Records for any question (SituatedQA's plain questions): the asked question in the sentence.
ASKED_RECORDS: tuple[ProseTemplate, ...] = (
    lambda p: f"Starting in {p.when}: {p.value}, if you ask {p.ask}.",
    lambda p: f"If anyone asks {p.ask}, the answer from {p.when} on reads {p.value}.",
    lambda p: f"{p.value} answers '{p.ask}' from {p.when} onward.",
    lambda p: f"The answer to '{p.ask}' changed in {p.when} to {p.value}.",
    lambda p: f"In {p.when} we started answering '{p.ask}' with {p.value}, and that held.",
    lambda p: f"From {p.when}, '{p.ask}' gets {p.value} for an answer.",
)
# Members' notes in informal words, with no date.
NOTES: tuple[ProseTemplate, ...] = (
    lambda p: f"I'd go with {p.value} for {p.ref} tbh",
    lambda p: f"pretty sure it's {p.value} for {p.ref}",
    lambda p: f"fwiw my spreadsheet says {p.value} for {p.ref}",
    lambda p: f"last I looked, {p.ref} → {p.value}",
    lambda p: f"{p.value} for {p.ref}, unless something changed",
    lambda p: f"my money's on {p.value} re {p.ref}",
    lambda p: f"heard {p.value} mentioned for {p.ref} the other day",
    lambda p: f"{p.value}? that's what I have written down for {p.ref}",
    lambda p: f"ngl I thought {p.ref} went to {p.value}",
    lambda p: f"quick one: {p.ref} — {p.value}, right?",
)
STALE_NOTES: tuple[ProseTemplate, ...] = NOTES + (
    lambda p: f"haven't heard otherwise: {p.value} for {p.ref}",
    lambda p: f"{p.ref} hasn't moved off {p.value} afaik",
)
CONFIRM_NOTES: tuple[ProseTemplate, ...] = NOTES + (
    lambda p: f"yep, {p.value} for {p.ref}, saw it myself",
    lambda p: f"can confirm {p.value} on {p.ref}",
)


def prose_text(memory: Row, rng: random.Random) -> str:
    """A memory's words again in a prose record or an informal note, by its role."""
    p = Prose.of(memory["phrase"])
    role = memory.get("role", "record")
    if role == "record":
        pool = (NAMED_RECORDS + ASKED_RECORDS) if p.what else ASKED_RECORDS
    else:
        pool = STALE_NOTES if role == "stale" else CONFIRM_NOTES
    return _cap(rng.choice(pool)(p)) if role == "record" else rng.choice(pool)(p)


# -- noise -------------------------------------------------------------------------------------

CLAUSES = (", according to last week's minutes", " (per the annual report)", ", which we double-checked",
           ", if the wiki can be trusted", " — source: the archive", ", give or take the paperwork",
           ", going by the newsletter")  # fmt: skip
_DEICTIC = {"head coach": "the club", "home venue": "the club", "league": "the club", "chairperson": "the club",
            "headquarters location": "the company", "chief executive officer": "the company",
            "owner": "the piece", "location": "the piece", "exhibition": "the piece", "capital": "the place",
            "head of government": "the place", "head of state": "the place", "country": "the place",
            "officeholder": "the post", "occupant": "the building", "operator": "the site"}  # fmt: skip


def typo(word: str, rng: random.Random) -> str:
    """One-letter edit of a word of 4+ letters: swap two inner letters, drop one, or double one."""
    letters = [i for i, c in enumerate(word) if c.isalpha()]
    if len(letters) < 4:
        return word
    i = rng.choice(letters[1:-1])
    kind = rng.randrange(3)
    if kind == 0 and i + 1 < len(word) and word[i + 1].isalpha() and word[i + 1] != word[i]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def _typo_in(text: str, span: str, rng: random.Random) -> str | None:
    """``text`` with a one-letter typo in one long word of ``span`` (where ``span`` occurs in it)."""
    at = text.find(span) if span else -1
    words = [m for m in re.finditer(r"[^\W\d_]{4,}", span)] if at >= 0 else []
    if not words:
        return None
    w = rng.choice(words)
    new = typo(w.group(0), rng)
    if new == w.group(0):
        return None
    start = at + w.start()
    return text[:start] + new + text[start + len(w.group(0)):]


def _with_clause(text: str, rng: random.Random) -> str:
    body = text.rstrip()
    end = body[-1] if body and body[-1] in ".?!" else ""
    return (body[: -1] if end else body) + rng.choice(CLAUSES) + end


def short_names(name: str, attribute: str | None, note: bool) -> list[str]:
    """How a writer may shorten a subject's name: without its parenthetical, the surname, initials, and in a
    note "the club" / "the place" for what the attribute says the subject is."""
    out = []
    bare = re.sub(r"\s*\([^)]*\)", "", name).strip()
    if bare and bare != name:
        out.append(bare)
    parts = bare.split()
    if len(parts) >= 2 and all(w[:1].isupper() for w in parts):
        out.append(parts[-1])
        out.append(" ".join(w[0] + "." for w in parts[:-1]) + " " + parts[-1])
    if note and attribute in _DEICTIC:
        out.append(_DEICTIC[attribute])
    return out


def _subject_word(question: str, text: str) -> str:
    """The longest word of the question that the text writes too (what names the subject where no name is given)."""
    words = sorted((w for w in re.findall(r"[^\W\d_]{6,}", question) if w in text), key=lambda w: (-len(w), w))
    return words[0] if words else ""


def noisy_text(memory: Row, text: str, rng: random.Random, rate: float = 0.3) -> tuple[str, list[str]]:
    """``text`` with, at ``rate``, a typo (in the value or the name) or an extra clause; and the subject's name
    shortened, at ``rate`` in a note and a third of it in a record. Returns the text and what was done."""
    phrase = memory.get("phrase") or {}
    name, value = phrase.get("name") or "", str(phrase.get("value") or "")
    note = memory.get("type") == "individual"
    done: list[str] = []
    if rng.random() < (rate if note else rate / 3) and name and name in text:
        options = short_names(name, phrase.get("attribute"), note)
        if options:
            short = rng.choice(options)
            text = text.replace(name, short)
            done.append(f"short:{short}")
    if rng.random() < rate:
        kind = rng.choice(("typo-value", "typo-name", "clause"))
        subject = name or _subject_word(str(phrase.get("question") or ""), text)  # no name: the question's longest word
        changed = _typo_in(text, value if kind == "typo-value" else subject, rng) if kind != "clause" else None
        if changed is None:
            changed, kind = _with_clause(text, rng), "clause"
        text = changed
        done.append(kind)
    return text, done


# -- carrying new words through a dataset -----------------------------------------------------


def rewrite(data: Dataset, text_of: Callable[[Row], str], info: dict | None = None) -> Dataset:
    """The same dataset with each memory's words from ``text_of(memory row)``: the stream, the gold decisions'
    texts (original, against, maintained) and the memories' original and maintained texts follow."""
    memories = [dict(m) for m in data.memories]
    new = {m["memory_id"]: text_of(m) for m in memories}
    for m in memories:
        m["original"] = new[m["memory_id"]]
        m["maintained"] = (revised_text(m["original"], m["outdated_at"], m["superseded_by"])
                           if m["outdated_at"] is not None else m["original"])  # fmt: skip
    by_id = {m["memory_id"]: m for m in memories}
    groups = [{**g, "memories": [{**x, "content": new[x["memory_id"]]} for x in g["memories"]]} for g in data.groups]
    gold = []
    for row in data.gold:
        text = new[row["memory_id"]]
        maintained = (revised_text(text, row["time"], by_id[row["memory_id"]]["superseded_by"])
                      if row["action"] == "revise" else text)  # fmt: skip
        gold.append({**row, "original": text, "maintained": maintained,
                     "against": [{**a, "content": new[a["memory_id"]]} for a in row["against"]]})
    return Dataset(groups=groups, questions=[dict(q) for q in data.questions], gold=gold, memories=memories,
                   info={**data.info, **(info or {})})


def prose(data: Dataset, seed: int = 0) -> Dataset:
    """Every record in prose with its date inside, every note in informal words."""
    rng = random.Random(f"prose:{seed}")
    return rewrite(data, lambda m: prose_text(m, rng) if m.get("phrase") else m["original"], {"variant": "prose"})


def noisy(data: Dataset, seed: int = 0, rate: float = 0.3) -> Dataset:
    """The dataset's own words with typos, extra clauses and shortened names (:func:`noisy_text`); each memory
    row records what was done under ``noise``."""
    rng = random.Random(f"noisy:{seed}")
    done: dict[str, list[str]] = {}

    def text_of(m: Row) -> str:
        text, what = noisy_text(m, m["original"], rng, rate)
        done[m["memory_id"]] = what
        return text

    out = rewrite(data, text_of, {"variant": "noisy"})
    for m in out.memories:
        m["noise"] = done.get(m["memory_id"], [])
    return out
