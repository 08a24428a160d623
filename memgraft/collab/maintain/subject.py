"""Who a memory is about, and what value it states: read once per text, before any judge decides.

Why: in a real team hundreds of subjects share an attribute ("the head coach of ...", "the
political party of ..."), and a pair judge that reads one pair at a time retires one
subject's current memory with another subject's record ("the political party of Steele
Hall is Liberal Party" by "... of Walter Veltroni is Democrats of the Left"). Graphiti
resolves entities before it invalidates an edge between them; here a memory is read into

* its **value**: what it states, the words after the last thing that opens a value ("?",
  ":", "=", a dash, "is", "was", "as") once a kind tag ("Log:"), a trailing hedge (", as
  far as I know") and a replacement clause ("instead of X") are cut; in prose without such
  an opener, its last run of names;
* its **names**: the runs of capitalised words and numbered names ("U-38", "Class 15",
  "Pelican (Fabergé egg)"), years and months left out (a date says when, not who). The
  value's own names count too: an informal note puts its value first ("I'd go with Claudio
  Ranieri for the head coach of Inter Milan"), and a whole run must match, so a shared
  value never makes two subjects one ("Dennis Berry" does not name "Dennis Quaid");
* the **old values it replaces**: what follows "instead of", "rather than", "in place of",
  "replacing", "replaces", "no longer", "no more", "stopped", "from X to Y".

A pair is about *another subject* when both name a subject before their values and no name of
one (the values' included) matches a name of the other. Names match whole or in part (a surname, "Gibbons", names "Leeza
Gibbons"), spelt almost alike (a typo, "Minan Canth"; accents, "Sokolowsko") but never with
other numbers ("U-38" is not "U-120"). A pair is *unsure* when either names no subject
(lower-case questions, "the place", a description): the judge decides those, as before.

Nothing here reads a template's words: openers and replacement words are English
function words, and names are read off capitals and digits.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from memgraft.collab.maintain import asked, rules

# a time, a measure, a score or an amount is one word ("14:00", "37 °C", "27–10", "$1,000", "12,781"), so its colon,
# dash or comma opens no value and its unit names no one
_TOKEN = re.compile(r"[$€£¥]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|[$€£¥]\d+(?:\.\d+)?|\d+(?:[:.,]\d+)*\s?°\s?[CF]?\b|\d+(?::\d+)+|\d+(?:–\d+)+|[^\W_]+(?:[-'’.&/][^\W_]+)*\.?|[^\w\s]", re.UNICODE)
_CURRENCY = frozenset("$€£¥")
_OPENERS = frozenset({"?", ":", "=", "—", "–", "is", "was", "are", "were", "as", "be", "been", "remains", "became",
                      "becomes", "to"})
_STRONG_OPENERS = frozenset({"?", ":", "=", "—", "–"})
_CLOSERS = frozenset({".", ",", ";", "!", "(", ")", '"'})
_JOINERS = frozenset({"of", "de", "the", "and", "von", "van", "du", "la", "le", "da", "al", "bin", "del", "der", "&"})
_MONTHS = frozenset("january february march april may june july august september october november december "
                    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
                    "saturday sunday".split())
# words a capital opens a sentence with that are not names ("Which", "Record", "Tell")
_NOT_NAMES = rules.STOP_WORDS | frozenset(
    "record note log confirmed checked observation q a name tell give list find identify will please".split())
_REPLACED = re.compile(  # not where a negation says the old value holds ("hasn't moved off X", "never dropped X")
    r"(?<!n't )(?<!n’t )(?<!not )(?<!never )\b(?:instead\s+of|rather\s+than|in\s+place\s+of|replac(?:es|ed|ing)(?!\s+(?:by|with)\b)|no\s+longer(?!\s+(?:supported|used|needed|allowed|in\s+use)\b)(?:\s+(?:use|uses|using|on|at|in))?|"
    r"no\s+more|stopp?(?:ed|ing)?\s+(?:using|ordering|running|doing)?|dropp?(?:ed|ing)?|retir(?:ed|ing)|"
    r"ditch(?:ed|ing)?|scrapp?(?:ed|ing)?|phas(?:ed|ing)\s+out|swapp?(?:ed|ing)?(?:\s+out)?|moved?\s+(?:away\s+from|off)|"
    r"(?<!\w)from(?=\s+\S+(?:\s+\S+){0,4}\s+to\b))\s+(?P<old>[^.;,!?]{1,80}?)(?=\s+(?:to|with|for|in|on|at|from|"
    r"by|as|is|are|was|were|starting|effective)\b|[.;,!?)]|$)"
    r"|(?:,\s*|\(\s*)(?:not|from|was|were|formerly|previously|used\s+to\s+be)\s+(?P<not>[^.;,!?()]{1,80}?)(?=\s*[.;,!?)]|$)",
    re.IGNORECASE)
# "Buffer X is replaced by buffer Y", "Airflow is out", "Thursdays are done": the old value stands before the verb
_REPLACED_BY = re.compile(r"(?:^|[.;,!?:]\s+)(?P<old>[^.;,!?:]{1,80}?)\s+(?:is|are|was|were|has\s+been|have\s+been|"
                          r"will\s+be|gets|got|is\s+being|are\s+being)\s+(?:(?:replaced|superseded|swapped)\s+(?:by|with|for)\b|"
                          r"(?:out|done|over|gone|retired|deprecated|dropped|discontinued|decommissioned|scrapped|"
                          r"cancell?ed|sunset|phased\s+out|switched\s+off|turned\s+off|shut\s+down|no\s+longer\s+"
                          r"(?:supported|used|in\s+use|needed|allowed))(?=\s*(?:[.;,!?)]|$|and\b|now\b|for\b)))",
                          re.IGNORECASE)
# a hedge or a source that ends a text ("..., according to the archive.") says who holds it, not what it states
_HEDGE = re.compile(r"(?:,\s*(?:as\s+far\s+as\s+I\s+know|I\s+think|I\s+believe|tbh|probably|apparently|iirc)|"
                    r"(?:,|\s*[—–(]|\s+-)\s*(?:source\s*:|according\s+to|per|says|going\s+by)\s+(?:the|our|my|their|this)\s+"
                    r"(?:\w+\s+){0,2}?\w+\s*\)?)\s*[.!]?$", re.IGNORECASE)
_YEAR = re.compile(r"1\d{3}|2[01]\d{2}")
_PRONOUN_I = re.compile(r"I(?:['’](?:d|m|ve|ll))?$")  # "I", "I'd", "I'm": the writer, not a name
NEAR = 0.8  # spelling similarity at which two name words are one name (a typo, a dropped accent)


@dataclass(frozen=True)
class Reading:
    """What one memory text says: its subject's name runs, its value, the old values it says are replaced."""

    names: tuple[tuple[str, ...], ...]  # every name run, the value's too
    subject: tuple[tuple[str, ...], ...]  # the runs that start before the value: who it is about
    value: tuple[str, ...]
    replaced: tuple[tuple[str, ...], ...]
    by_run: bool = False  # no opener: the value is the last run of names


def fold(word: str) -> str:
    """Lower case without accents: "Sokołowsko" and "Sokolowsko" spell one name."""
    decomposed = unicodedata.normalize("NFKD", word.lower().replace("ł", "l").replace("ø", "o").replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).rstrip(".")


def _is_word(tok: str) -> bool:
    return tok[:1].isalnum() or (tok[:1] in _CURRENCY and tok[1:2].isdigit())


def _is_name(tok: str, first: bool, nxt: str) -> bool:
    """A capitalised word or a word with a digit; at a sentence's start only when the next word is one too."""
    if not _is_word(tok) or tok == "I":
        return False
    if any(c.isdigit() for c in tok):
        return True
    if not tok[:1].isupper() and not any(c.isupper() for c in tok[1:]):
        return False
    if fold(tok) in _NOT_NAMES:
        return False
    return not first or (nxt[:1].isupper() and (fold(nxt) not in _NOT_NAMES or _label(nxt)))


def _label(tok: str) -> bool:
    """"A" after a name word labels it ("Freezer A", "Plan A", "Compound A"): an article never follows a name."""
    return tok == "A"


def _is_date(run: tuple[str, ...]) -> bool:
    return all(w.rstrip("s") in _MONTHS or (w.isdigit() and (len(w) == 4 or len(w) <= 2)) or w in {"th", "st", "nd"}
               for w in run)


def _runs(toks: list[str]) -> list[tuple[int, int]]:
    """(start, end) token spans of name runs; "of", "de" may join two capitalised words."""
    spans: list[tuple[int, int]] = []
    start = None
    i = 0
    while i < len(toks):
        first = i == 0 or toks[i - 1] in {".", "?", "!", ":", '"'}
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if _is_name(toks[i], first, nxt) or (start is not None and _label(toks[i])):
            if start is None:
                start = i
            i += 1
            continue
        if start is not None and fold(toks[i]) in _JOINERS and i + 1 < len(toks) and \
                _is_name(toks[i + 1], False, ""):
            i += 1
            continue
        if start is not None and toks[i] == "(" and ")" in toks[i:i + 8]:  # "Pelican (Fabergé egg)": one name
            i = toks.index(")", i) + 1
            continue
        if start is not None:
            spans.append((start, i))
            start = None
        i += 1
    if start is not None:
        spans.append((start, len(toks)))
    return spans


def _words(toks: list[str]) -> tuple[str, ...]:
    return tuple(fold(t) for t in toks if _is_word(t))


@lru_cache(maxsize=65536)
def _read(text: str) -> Reading:
    # the question it answers is what it is about, not its value ("49ers, if you ask who did green bay lose to ...")
    body = _HEDGE.sub("", asked.without_questions(rules.strip_label(text).strip()).strip())
    found = [*_REPLACED.finditer(body), *_REPLACED_BY.finditer(body)]
    replaced = tuple(w for w in (_words(_TOKEN.findall(m.group("old") or m.groupdict().get("not") or ""))
                                 for m in found) if w)
    main = _REPLACED_BY.sub(" ", _REPLACED.sub(" ", body))
    toks = _TOKEN.findall(main)
    while toks and not _is_word(toks[-1]):
        toks.pop()
    runs = _runs(toks)
    # the value: after the last strong opener ("?", ":", "="); else the last "is"/"was"/"as"; else the last name run
    cut = next((i for i in range(len(toks) - 1, -1, -1) if toks[i] in _STRONG_OPENERS), None)
    if cut is None:
        cut = next((i for i in range(len(toks) - 1, -1, -1) if fold(toks[i]) in _OPENERS), None)
    end, by_run = len(toks), cut is None and bool(runs)
    if by_run and runs[-1][0] == 0 and runs[-1][1] < len(toks) and _is_word(toks[runs[-1][1]]) and \
            fold(toks[runs[-1][1]]) not in rules.STOP_WORDS:
        # the text opens with its only name and a verb says something of it: the name is who it is about
        # ("Freezer A holds enzymes and buffers"), the rest its value; not a value put first ("Time Warner for
        # the owner of ...")
        cut, by_run = runs[-1][1] - 1, False
    if by_run:  # the last run, to its clause's end: "... with Wilt Chamberlain, and that held"
        cut = runs[-1][0] - 1
        end = next((i for i in range(runs[-1][1], len(toks)) if toks[i] in _CLOSERS), len(toks))
        while end > runs[-1][1] and fold(toks[end - 1]) in rules.STOP_WORDS:
            end -= 1  # a word left where a question was cut ("Ohio State for '…'") ends no value
    start = (cut + 1) if cut is not None else len(toks)
    while start < len(toks) and fold(toks[start]) in {"still", "now", "currently", "already", "again", "the", "a",
                                                      "an"}:
        start += 1
    value = _words(toks[start:end])
    names, subject_ = [], []
    for s_, e in runs:
        run = tuple(w for w in _words(toks[s_:e]) if w not in _JOINERS)
        if run and not _is_date(run):
            names.append(run)
            if s_ < start:
                subject_.append(run)
    return Reading(tuple(names), tuple(subject_), value, replaced, by_run)


def read(text: str) -> Reading:
    return _read(text[: rules.READ_CHARS])


@lru_cache(maxsize=1 << 17)
def near(x: str, y: str) -> bool:
    """One word, or the same word with a typo: same first letter, no digits. A long word may differ by a few
    letters; a short one ("Rot" for "Root") or a month ("Octobre"), only by one slip (:func:`_slip`), so two
    months, or "Ivan" and "Ivana", stay two words. Cached, and the similarity's cheap upper bounds tried first:
    a write of long notes asks it ~100,000 times."""
    if x == y:
        return True
    if any(c.isdigit() for c in x + y) or min(len(x), len(y)) < 3 or x[0] != y[0]:
        return False
    if min(len(x), len(y)) < 5 or x.rstrip("s") in _MONTHS or y.rstrip("s") in _MONTHS:
        return _slip(x, y)
    m = difflib.SequenceMatcher(None, x, y, autojunk=False)
    return m.real_quick_ratio() >= NEAR and m.quick_ratio() >= NEAR and m.ratio() >= NEAR


def _slip(x: str, y: str) -> bool:
    """``y`` is ``x`` with two neighbouring letters swapped, or one letter dropped or added inside the word
    (not at an end: "Ivana" is not "Ivan")."""
    if len(x) == len(y):
        diff = [i for i in range(len(x)) if x[i] != y[i]]
        return len(diff) == 2 and diff[1] == diff[0] + 1 and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]]
    short, long_ = (x, y) if len(x) < len(y) else (y, x)
    if len(long_) - len(short) != 1:
        return False
    return any(long_[:i] + long_[i + 1:] == short for i in range(1, len(long_) - 1))


def names_match(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """One name run names the other's subject: every word of the shorter is (almost) a word of the longer, or
    an initial of one ("G. Whittingham", "L. S. College"), at least one word is written out, and their
    numbers agree."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    digits_a = {w for w in a if any(c.isdigit() for c in w)}
    digits_b = {w for w in b if any(c.isdigit() for c in w)}
    if digits_a and digits_b and digits_a != digits_b:
        return False
    alpha = [w for w in short if not any(c.isdigit() for c in w)]
    if not alpha:
        return bool(digits_a) and digits_a == digits_b
    return all(any(near(w, v) or _initial(w, v) for v in long_) for w in alpha) \
        and any(any(near(w, v) for v in long_) for w in alpha)


_WORD = re.compile(r"[^\W\d_][\w'’.-]*")


def spells(run: tuple[str, ...], text: str) -> bool:
    """A one-word name run of three letters or more is the initials of capitalised words in ``text``, in a row,
    its small words skipped: "MPIA" is spelled by "Max Planck Institute for Astronomy", "MIT" by "Massachusetts
    Institute of Technology"."""
    return len(run) == 1 and spelling(run[0], text) is not None


_NAME_JOINERS = _JOINERS | frozenset("für des di y e et zu dos das do em".split())  # "Institut für Astronomie"


def spelling(acr: str, text: str) -> str | None:
    """The words of ``text`` whose initials ``acr`` is (see :func:`spells`), as written there; None if none. A
    hyphenated name gives each part's initial, and a name's small joining word in any language is skipped:
    "Max-Planck-Institut für Astronomie" spells "MPIA"."""
    if len(acr) < 3 or not acr.isalpha():
        return None
    acr, words = fold(acr), [(part, m.start(), m.end()) for m in _WORD.finditer(text)
                             for part in (m[0].split("-") if m[0][0].isupper() else (m[0],)) if part]
    for start, (first, at, _) in enumerate(words):
        if not first[0].isupper() or fold(first)[0] != acr[0]:
            continue
        k = 0
        for w, _, end in words[start:]:
            if w[0].isupper() and fold(w)[0] == acr[k]:
                k += 1
                if k == len(acr):
                    return text[at:end].rstrip(".")
            elif not (w.islower() and (w in rules.STOP_WORDS or w in _NAME_JOINERS)):
                break
    return None


def _initial(x: str, y: str) -> bool:
    """One of the two is the other's initial ("g" for "guy")."""
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    return len(short) == 1 and len(long_) > 1 and long_[0] == short and short.isalpha()


def same_subject(a: str, b: str) -> bool | None:
    """True: a name of one matches a name of the other; False: both name a subject before their values, and no
    name of one matches one of the other (another subject); None: either names none (unsure). A value alone never
    makes another subject: "Deploys happen at Acme" and "Deploys now happen at Globex" are one subject."""
    ra, rb = read(a), read(b)
    if any(names_match(x, y) for x in ra.names + ra.replaced for y in rb.names + rb.replaced):
        return True  # what one says is replaced is what the other is about: "Airflow is out" / "... to Airflow"
    if any(spells(x, b) for x in ra.subject) or any(spells(y, a) for y in rb.subject):
        return True  # "the MPIA" and "Max Planck Institute for Astronomy"
    if not ra.subject or not rb.subject:
        return None
    return False


def another_subject(a: str, b: str) -> bool:
    return same_subject(a, b) is False


_PRO_FORMS = frozenset({"one", "ones"})  # "three-week sprints instead of two-week ones": "ones" names nothing


def content(words: tuple[str, ...]) -> tuple[str, ...]:
    """Words that name something: not function words or pro-forms, but a lone letter stays ("Compound A"); a
    hyphenated word counts as its parts ("two-week" is stated by "two weeks")."""
    return tuple(part for w in words if (w not in rules.STOP_WORDS or len(w) == 1) and w not in _PRO_FORMS
                 for part in (w.split("-") if "-" in w and not any(c.isdigit() for c in w) else (w,))
                 if part and (part == w or part not in rules.STOP_WORDS))


def stated(value: tuple[str, ...], old: tuple[str, ...]) -> bool:
    """Every content word of ``old`` is among ``value``'s words, a hyphenated word's parts included on both sides
    (:func:`content` reads "T-Series" as "t" and "series")."""
    words = content(old)
    return bool(words) and all(among(w, with_parts(value)) for w in words)


def with_parts(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words and the parts of the hyphenated ones, as :func:`content` splits them."""
    return words + tuple(part for w in words if "-" in w for part in w.split("-") if part)


def restates(a: str, b: str) -> bool:
    """``a`` names ``b``'s value word for word, in order, where ``b``'s value was read after what opens one and
    ``a``'s only as its last run of names: "heard Angelo Bonelli mentioned for the chairperson of the Greens the
    other day" restates "The answer ... changed in October 2009 to Angelo Bonelli", whatever name it ends on.
    The value must be a whole name of ``a``'s other than the one read as its value ("launches on May 3" does not
    restate "(was May 3)"), not part of a longer name, not inside a question and not one item of a list."""
    ra, rb = read(a), read(b)
    if not ra.by_run or rb.by_run or rb.replaced or not strong(rb.value):
        return False
    v, n = rb.value, len(rb.value)

    def is_value(run: tuple[str, ...]) -> bool:
        return len(run) == n and all(near(x, y) for x, y in zip(run, v))

    if not any(is_value(run) and run != ra.value for run in ra.names):
        return False
    words = text_words(asked.without_questions(a[: rules.READ_CHARS]))
    return any(is_value(words[i: i + n]) and "and" not in words[max(i - 1, 0): i + n + 1]
               for i in range(len(words) - n + 1))


@lru_cache(maxsize=65536)
def text_words(text: str) -> tuple[str, ...]:
    """Every word of the text, its kind tag dropped, folded: read once per text, not once per pair."""
    return _words(_TOKEN.findall(rules.strip_label(text)))


def among(word: str, words: tuple[str, ...]) -> bool:
    """``word`` is one of ``words``, misspelt or in the plural. Only words with its first letter can be either
    (:func:`near`, :func:`plural`), so only those are compared: a 900-character note against another compared
    every pair of their words, and a write of 64 such notes spent most of its rules' time here."""
    return any(near(word, v) or plural(word, v) for v in _by_letter(words).get(word[:1], ()))


@lru_cache(maxsize=4096)
def _by_letter(words: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    grouped: dict[str, list[str]] = {}
    for v in words:
        grouped.setdefault(v[:1], []).append(v)
    return {k: tuple(v) for k, v in grouped.items()}


def plural(x: str, y: str) -> bool:
    return x.rstrip("s") == y.rstrip("s") and len(x.rstrip("s")) >= 3


def strong(value: tuple[str, ...]) -> bool:
    """A value that can tell two statements apart: a word of two letters or more, or a whole number."""
    return any(len(w) >= 2 and not w.isdigit() or (w.isdigit() and len(w) >= 2 and not w.startswith("0"))
               for w in value)


def raw_words(text: str) -> tuple[str, ...]:
    """Every word of the text as written (its kind tag too), folded."""
    return _words(_TOKEN.findall(text))
