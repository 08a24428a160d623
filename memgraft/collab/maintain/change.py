"""What a newer memory says changed: the old value it replaces, a change of decision, a list that lost an item.

Why apart from ``subject``: that module reads who a memory is about and what value it states; this one
compares two readings to tell whether the newer says the older no longer holds, as people say it ("now ...
instead of ...", "X replaces Y", "we stopped ..."), with no template's words.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memgraft.collab.maintain import marks, rules, subject

# a change of a decision that need not say the old value: "moves to Thursdays", "from now on", "cut to 30 days"
# "now" that ends a key ("Winter olympics being held now: Pyeongchang") names the attribute, not a change; "Starting
# in 2019," or "starting March 2021" dates a record, as "From 2019" does (a change says what moves, or from when on)
_CHANGE = re.compile(r"\b(?:now(?!\s*[:=—–?])|from\s+now\s+on|from\s+today|from\s+(?:monday|tuesday|wednesday|thursday|friday|next)|"
                     r"from\s+this\s+(?:week|month|quarter|year|season|sprint|term|release)(?:\s+on)?|"
                     r"going\s+forward|(?:starting|beginning)(?!\s+(?:in\s+)?(?:\d|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d))|henceforth|effective|as\s+of\s+(?:today|this|next)|anymore|"
                     r"no\s+longer|(?:went|goes|go|gone|going)\s+(?:up|down)|"
                     r"(?:move[sd]?|moving|switch(?:es|ed)?|switching|change[sd]?|changing|cut|raised?|lowered?|"
                     r"reduced?|increased?|bumped?|push(?:es|ed)?|shift(?:s|ed)?)\s+(?:\S+\s+){0,4}?to)\b", re.IGNORECASE)
# a measure: a number and the word after it ("14 days", "3 approvals", "10% gels"); a time of day ("9:30") is a clock
_MEASURE = re.compile(r"(?<![\w:.])(\d+(?:\.\d+)?)\s*(%|[^\W\d_]+)", re.UNICODE)
# an amount of money ("$1,000", "€ 250"), its currency the unit; an ordinal ("the 5th business day"), the word after
_MONEY = re.compile(r"([$€£¥])\s?(\d[\d,]*(?:\.\d+)?)")
_ORDINAL = re.compile(r"(?<![\w:.])(\d+)(?:st|nd|rd|th)\s+([^\W\d_]+)", re.UNICODE)
_WEEKDAY = re.compile(r"\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b", re.IGNORECASE)
_BEFORE_MEASURE = frozenset({"for", "to", "at", "on", "every", "by", "in", "from", "until", "till"})
_CLOCK = re.compile(r"\b(\d{1,2}[:.]\d{2})(?!\d)")
_NAMES_ITS_TARGET = re.compile(r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of|replac(?:es|ed|ing))\b", re.IGNORECASE)


def _items(value: tuple[str, ...]) -> list[tuple[str, ...]]:
    out, item = [], []
    for w in value:
        if w == "and":
            out.append(tuple(item))
            item = []
        else:
            item.append(w)
    return [i for i in [*out, tuple(item)] if i]


def _same_item(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    return len(x) == len(y) and all(subject.near(u, v) for u, v in zip(x, y))


def item_change(a: str, b: str) -> bool:
    """Both values are lists ("X and Y") that share an item and differ in another: one list replaced an item
    ("Oregon Women's Correctional Center and Valley State Prison" then "Clinton Correctional Facility and Valley
    State Prison"), so they disagree on the whole value, however alike the rest of their words. Not where both
    texts name the same things (:func:`~memgraft.collab.maintain.marks.same_marks`): "Bosnia and Herzegovina Davis Cup team" is one item, and a
    trailing clause is not another."""
    ra, rb = subject.read(a), subject.read(b)
    ia, ib = _items(ra.value), _items(rb.value)
    if max(len(ia), len(ib)) < 2 or not any(subject.strong(i) for i in ia + ib):
        return False
    shared = [x for x in ia if any(_same_item(x, y) for y in ib)]
    lost = len(shared) < len(ia) or any(not any(_same_item(y, x) for x in ia) for y in ib)
    if not shared or not lost:
        return False
    # both answered after an opener in short items ("...? Prada and Helmut Lang" / "...? Prada"): the lists are the
    # answers, though the question names the lost item too ("... the fashion brand Helmut Lang?")
    answers = not (ra.by_run or rb.by_run) and all(len(subject.content(i)) <= marks.ANSWER_WORDS for i in ia + ib)
    return answers or not marks.same_marks(a, b)


def replaces(newer: str, older: str) -> tuple[str, ...] | None:
    """The old value ``newer`` says is replaced ("instead of Tuesdays", "Buffer Y replaces buffer X") when ``older``
    states it and ``newer`` does not state it as its own value; None otherwise."""
    rn = subject.read(newer)
    if not rn.replaced:
        return None
    older_words = subject.text_words(older)
    ro = subject.read(older)
    for old in rn.replaced:
        words = subject.content(old)
        if not words or any(old == o for o in ro.replaced):
            continue
        if all(subject.among(w, older_words) for w in words) and not subject.stated(rn.value, old):
            return old
    return None


def shared_topic(newer: str, older: str, old_value: tuple[str, ...]) -> float:
    """Share of ``older``'s words, its replaced value aside, that ``newer`` also has: "Deploys of the mobile app
    happen on Tuesdays" shares half its words with "Web deploys now happen on Thursdays instead of Tuesdays"."""
    drop = set(old_value)
    older_words = [w for w in subject.content(subject.text_words(older)) if w not in drop and len(w) > 1]
    newer_words = subject.content(subject.text_words(newer))
    if not older_words:
        return 0.0
    return sum(any(w == v or subject.plural(w, v) for v in newer_words) for w in older_words) / len(older_words)


def names_another_target(newer: str, older: str) -> bool:
    """``newer`` says which value it replaces ("instead of Tuesdays", "replaces buffer X"), and ``older`` does not
    state it: a decision that names what it replaces replaces that, not "Deploys of the mobile app happen on
    Mondays" beside it."""
    rn = subject.read(newer)
    return bool(rn.replaced) and bool(_NAMES_ITS_TARGET.search(newer[: rules.READ_CHARS])) and \
        replaces(newer, older) is None


def changes(newer: str) -> bool:
    """``newer`` states a change of what held ("moves to", "from now on", "cut to 30 days")."""
    return bool(_CHANGE.search(rules.strip_label(newer)[: rules.READ_CHARS]))


def names_only(older: str, old_value: tuple[str, ...]) -> bool:
    """``older`` names nothing but the value ``newer`` replaces ("We track all work in Jira." for "We stopped using
    Jira"): a memory about that value, whatever else its words are."""
    names = subject.read(older).names
    return bool(names) and all(all(subject.among(w, old_value) for w in n) for n in names)


def states_only(older: str, old_value: tuple[str, ...]) -> bool:
    """``older``'s value is the value ``newer`` replaces, word for word (a typo or a plural allowed): "Design review
    happens Monday mornings." for "... now (was Monday mornings)", however the two name what is decided."""
    value, old = subject.content(subject.read(older).value), subject.content(old_value)
    return bool(value) and bool(old) and all(subject.among(w, old) for w in value) and \
        all(subject.among(w, value) for w in old)


def new_value(newer: str, older: str) -> bool:
    """``newer`` states a value ``older`` does not state, and does not state ``older``'s."""
    rn, ro = subject.read(newer), subject.read(older)
    if not subject.strong(rn.value) or not subject.strong(ro.value):
        return False
    newer_words = subject.text_words(newer)
    return not subject.stated(newer_words, subject.content(ro.value)) and \
        not subject.stated(subject.raw_words(older), subject.content(rn.value))


@lru_cache(maxsize=16384)
def _measures(text: str) -> tuple[dict[str, frozenset[str]], frozenset[str], frozenset[str]]:
    """unit -> the numbers the text gives in it (a unit in the singular: "days" and "day" are one; a day of the
    week and a time of day are measures too, a slot: "Monday's 11:00 review" against "moving to Wednesdays"),
    the text's other content words as stems, and the word that governs each measure ("lasts 14 days", "kept for 30
    days": in a memory, the verb says how it is measured, not what; in a change, "passaging every 4 days", it
    may be what)."""
    body = rules.strip_label(text)[: rules.READ_CHARS]
    found: list[tuple[int, int, str, str]] = [(m.start(), m.end(), "weekday", m.group(1).lower())
                                              for m in _WEEKDAY.finditer(body)]
    found += [(m.start(), m.end(), "clock", m.group(1).lstrip("0")) for m in _CLOCK.finditer(body)]
    found += [(m.start(), m.end(), m.group(1), m.group(2).replace(",", "")) for m in _MONEY.finditer(body)]
    found += [(m.start(), m.end(), subject.fold(m.group(2)), m.group(1)) for m in _ORDINAL.finditer(body)
              if not any(a <= m.start() < b for a, b, _, _ in found)]
    for m in _MEASURE.finditer(body):
        unit = subject.fold(m.group(2))
        if unit not in rules.STOP_WORDS and not any(a <= m.start() < b for a, b, _, _ in found):
            found.append((m.start(), m.end(), unit[:-1] if len(unit) > 3 and unit.endswith("s") else unit, m.group(1)))
    out: dict[str, set[str]] = {}
    governing, rest, last = set(), [], 0
    for start, end, unit, number in sorted(found):
        out.setdefault(unit, set()).add(number)
        words = subject.raw_words(body[last:start])
        if len(words) > 1 and words[-1] in _BEFORE_MEASURE and words[-2] not in rules.STOP_WORDS:
            governing.add(_stem(words[-2]))  # "lasts 14 days", "kept for 30 days"; not "the trial is 14 days"
        elif words and words[-1] not in rules.STOP_WORDS:
            governing.add(_stem(words[-1]))
        rest += _topic_words(body[last:start])
        last = end
    rest += _topic_words(body[last:])
    return {u: frozenset(n) for u, n in out.items()}, frozenset(rest), frozenset(governing)


def _topic_words(text: str) -> list[str]:
    return [_stem(w) for w in subject.content(subject.raw_words(text)) if len(w) > 2 and not w[0].isdigit()]


def _stem(word: str) -> str:
    """One stem for a word's inflections, compared only with another stem: "team's" and "teams" are "team";
    "passaged", "passaging" and "passages" are "passag"; "moved", "moves" and "moving" are "mov"."""
    word = word[:-2] if word.endswith("'s") else word[:-1] if word.endswith("s") and not word.endswith("ss") else word
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def measure_change(newer: str, older: str) -> float:
    """Where both give a measure in one unit, in other numbers: the share of ``older``'s other words but its
    governing ones (what is measured) that ``newer`` has too; else 0. "Trial length cut to 7 days" changes "The
    free trial lasts 14 days" (1 of 2), where the two share too few words for :func:`shared_topic`; "Logs are
    kept for 30 days" shares no word but its verb with "Backups are now kept for 14 days" (0), and "The mobile
    team's stand-up is at 9:00" only one of three with "Moving stand-up to 10:00" (another team's stand-up)."""
    (mn, wn, _), (mo, wo, governing) = _measures(newer), _measures(older)
    wo -= governing
    shared = mn.keys() & mo.keys()
    if not shared or not wo or any(mn[u] & mo[u] for u in shared):
        return 0.0
    return len(wn & wo) / len(wo)
