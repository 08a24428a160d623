"""What a memory is about when it names no subject: its rare lower-case words, rare in its own team.

Why: a real team's questions and topics are often lower-case ("who has scored the most points
in a nba game", "the olympics coming to the us"), so :mod:`~memgraft.collab.maintain.subject`
reads no subject in them and the pair judge decides alone; in a team of hundreds of such
questions it reads a record on "most assists in a nba game" as replacing one on "most points".
Two wordings of one topic share its words; what tells two topics apart is a word only one
of them has that is rarer in the team than anything they share. Template and filler words
("according to the archive", "tbh", "passed to") recur across a team's topics, so they are
never the rarest; a topic's own words recur only in its own memories.

Counted per team over the original texts of the memories written before the group being
judged (:class:`TeamWords`, kept in step with the bank by write order), so a team's
maintenance reads only its own bank. Below ``min_memories`` a team's counts say little and
nothing is read. Nothing here reads a template: it is word counts and spelling.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable

from memgraft.collab.maintain import asked as asked_
from memgraft.collab.maintain import cased, kinds, rules, subject

if TYPE_CHECKING:
    from memgraft.collab.bank.store import MemoryBank

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)
_ALNUM = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)  # "14th" is one word, a number's, not "th"
# a question: from the last sentence start, colon or quote before it to its "?" ("my sheet lists "How many ...?" as 131")
_QUESTION = re.compile(r"(?:^|[.!:;\"“”«»—–]\s*)([^.!:;?\"“”«»—–]{3,200})\?")
# a question asked as a key ("Where was the previous fifa world cup held: Brazil", "When did dublin last win ... =
# 1938"): a clause up to the mark that opens its value; read only where it opens as a question does
_KEYED = re.compile(r"(?:^|[.!;\"“”«»]\s*)([^.!:;?=\"“”«»—–]{3,200}?)\s*[:=—–]\s*\S")
MAX_WORDS = 48  # a text with more topic words than this is not a one-topic note: nothing is read from it


@lru_cache(maxsize=65536)
def topic_words(text: str) -> frozenset[str]:
    """The text's lower-case content words, folded: capitalised words are names and values, which
    :mod:`subject` reads, and so is a lower-case word between two of them ("Vijay kumar Choudhary", "Abraj al
    Bait"); digits are values and times."""
    toks = _WORD.findall(rules.strip_label(text[: rules.READ_CHARS]))
    return _content_words(t for i, t in enumerate(toks) if not t[0].isupper() and not (
        0 < i < len(toks) - 1 and toks[i - 1][0].isupper() and toks[i + 1][0].isupper()))


def _content_words(toks: Iterable[str]) -> frozenset[str]:
    """Folded content words of two letters or more (:func:`subject.content`: a hyphenated word as its parts)."""
    return frozenset(w for w in subject.content(tuple(subject.fold(t) for t in toks)) if len(w) > 1)


@dataclass
class TeamWords:
    """Document frequency of topic words over one team's memories, up to a write position."""

    df: Counter = field(default_factory=Counter)
    n: int = 0  # memories counted
    last_rowid: int = 0  # the bank's write position counted up to

    def add(self, text: str) -> None:
        self.df.update(topic_words(text))
        self.n += 1


def question_words(text: str) -> frozenset[str] | None:
    """The lower-case content words of the question the text answers ("Who has scored the most points in a nba
    game? Wilt Chamberlain"; else a quoted one of three words or more that opens as a question does: "The answer
    to 'who won ...' changed"), None where it asks none: a question is the subject and attribute of what it
    answers, and the words around it (a kind tag, "my sheet lists ... as") are outside it."""
    found = _question(text)
    return found[0] if found else None


def _question(text: str) -> tuple[frozenset[str], bool] | None:
    """The question's words, and whether it opens as a question does (who, what, how, is, does ...)."""
    found = _asked(text)
    return found[:2] if found else None


@lru_cache(maxsize=65536)
def _asked(text: str) -> tuple[frozenset[str], bool, str] | None:
    """:func:`_question`'s reading, with the question's own text."""
    body = rules.strip_label(text[: rules.READ_CHARS])
    asked = [(words, asked_.opens(q), q) for q in map(_from_asking, _QUESTION.findall(body))
             if len(words := _question_words(q)) >= 2]  # not "..., right?"
    quoted = [(_question_words(q), True, q) for q in asked_.quoted_questions(body)]
    embedded = [(words, True, q) for q in asked_.asked_questions(body) if len(words := _question_words(q)) >= 2]
    # a quoted question is marked as one: "quick one: '...' — 40, right?"; a key is read only where nothing else asks
    found = quoted or asked or embedded or _keyed(body)
    return found[-1] if found else None


def _keyed(body: str) -> list[tuple[frozenset[str], bool, str]]:
    """Questions asked as keys ("Where was the previous fifa world cup held: Brazil") that open as questions do."""
    return [(words, True, q) for q in map(_from_asking, _KEYED.findall(body))
            if asked_.opens(q) and len(words := _question_words(q)) >= 2]


def asked_alike(a: str, b: str) -> bool:
    """Both texts' questions open with one question word, or neither with any: "who has most views on youtube for
    a song" asks for whoever sang it, "the song that has the most views on youtube" for the song."""
    qa, qb = _asked(a), _asked(b)
    return bool(qa and qb) and _opener(qa[2]) == _opener(qb[2])


def _opener(question: str) -> str:
    first = question.split()[0].lower().replace("’", "'") if question.split() else ""
    return first if first in asked_.ASKING else ""


def _from_asking(span: str) -> str:
    """The question from the clause that opens as one: "As of 2017, When's the last time ...?" asks "When's ...".
    A clause before it that names something stays its part ("Regarding the institute founded by Hans Elsässer,
    what person managed it?" asks about that institute)."""
    parts = span.split(", ")
    i = next((i for i in range(1, len(parts)) if asked_.opens(parts[i])), 0)
    return ", ".join(parts[i:]) if i and asked_.names_none(", ".join(parts[:i])) else span


def _question_words(question: str) -> frozenset[str]:
    """A lower-case question's content words, its numbers too ("episode 95" is not "episode 97"); none where it
    names its subject (a capital past its first word: "the Italian city Florence was ..."), which :mod:`subject`
    reads, and which is asked in many words."""
    toks = _ALNUM.findall(question)
    if any(t[0].isupper() for t in toks[1:]):
        return frozenset()
    words = _content_words(t for t in toks if not t[0].isupper() and not any(c.isdigit() for c in t))
    # numbers only beside two words or more: "— 2010, right?" asks nothing
    return words | _content_words(t for t in toks if t[0].isdigit()) if len(words) >= 2 else words


def other_question(a: str, b: str) -> bool:
    """The two answer two questions: both ask and each question has a word the other's question lacks (a typo, a
    plural, a hyphen's parts allowed; :func:`asked_apart`), or, where only one text asks and its question opens as one ("who ...", "how many ..."), two
    of its words are missing from the other: "most points in a nba game" and "most assists in a nba game" are two
    questions, whatever their answers. Read from the two texts alone, so it holds in a team of any size; a question
    asked again in other words ("Who scored the most points in one nba basketball game?") keeps every word of the
    shorter one, and a statement of it every word but one."""
    qa, qb = _question(a), _question(b)
    if qa and qb and qa[0] and qb[0]:  # both ask: question against question, not the words around the other's
        return _apart(qa[0], qb[0])  # ("..., and that held" is no "been held")
    miss_a, miss_b = _missing(qa, b), _missing(qb, a)
    # one asks: a statement with a "?" ("To present, usl league one has been home for richmond kickers?") is none
    return (len(miss_a) >= 2 and qa[1]) or (len(miss_b) >= 2 and qb[1])


def _apart(qa: frozenset[str], qb: frozenset[str]) -> bool:
    """Each question's words hold one the other's lack (a typo, a plural or a hyphen's parts allowed)."""
    return _lacks(qa, qb) and _lacks(qb, qa)


def _lacks(words: frozenset[str], other: frozenset[str]) -> bool:
    parts = subject.with_parts(tuple(other))
    return any(not subject.among(w, parts) for w in words)


def asked_otherwise(a: str, b: str) -> bool:
    """Both ask a lower-case question and one question holds a word the other's lacks (a typo, a plural or a
    hyphen's parts allowed): a word added to a question narrows it ("... had a partial solar eclipse", "... won
    olympic gold in hockey", "... the most goals in a world cup final"), so an answer to one is no answer of the
    other gone out of date, either way. Where only one text asks, as a question opens, a word of its question the
    other text lacks says the same when the word names a thing (:mod:`kinds`): the other states another question's
    answer ("the last time toronto won a playoff series" / "when was the last time the bucks won a playoff
    series"); a verb put otherwise ("going to school" / "the school of") says nothing."""
    qa, qb = _question(a), _question(b)
    if qa and qb and qa[0] and qb[0]:
        return _lacks(qa[0], qb[0]) or _lacks(qb[0], qa[0])
    for q, text, other in ((qa, a, b), (qb, b, a)):
        missing = _missing(q, other) if q is not None and q[1] else []
        if missing and not kinds.things(text).isdisjoint(missing):  # the tagger only where a word is missing
            return True
    return False


def _missing(question: tuple[frozenset[str], bool] | None, other: str) -> list[str]:
    """The words of a text's question (:func:`_question`) that ``other`` lacks (a typo, a plural or a hyphen's parts
    allowed)."""
    return [w for w in (question[0] if question else ()) if not subject.among(w, _with_parts(other))]


def other_question_on_topic(a: str, b: str) -> bool:
    """Two questions (:func:`other_question`) on one topic: they share a topic word ("world cup"). Two wordings that
    share none may be one question asked in other words ("Who filled the vacant manager position?" / "Who was the
    coach of sv darmstadt 98 after ...?"), which only a third memory can link."""
    return other_question(a, b) and bool(topic_words(a) & topic_words(b))


def asked_apart(a: str, b: str) -> bool:
    """Both ask a lower-case question, and each question has a word the other's lacks: two questions, whether or not
    they share a topic word ("who carried the us flag at opening ceremony" / "who holds the record for the most
    olympic medals": "Michael Phelps" answered one; it is no answer of the other's gone out of date)."""
    qa, qb = _question(a), _question(b)
    return bool(qa and qb and qa[0] and qb[0]) and _apart(qa[0], qb[0])


SAME_MIN_WORDS = 3  # a question's content words from which it says what one memory is about


def same_question(a: str, b: str) -> bool:
    """The two answer one lower-case question: one of them asks it as a question opens (three content words or
    more), and every word of each text's question is in the other text (a typo, a plural or a hyphen's parts
    allowed). Then the question is what both are about, and the names they carry are its answers: "Bruce Willis
    answers 'who has been paid the most for a movie' from 1999 onward" and "Keanu Reeves answers '...' from
    2003" are one subject, whatever names a subject reader finds before their values."""
    qa, qb = _question(a), _question(b)
    if not any(q and q[1] and len(q[0]) >= SAME_MIN_WORDS for q in (qa, qb)):
        return False
    return all(subject.among(w, _with_parts(other)) for q, other in ((qa, b), (qb, a)) if q for w in q[0])


@lru_cache(maxsize=65536)
def _with_parts(text: str) -> tuple[str, ...]:
    """The text's words and the parts of its hyphenated ones, as :func:`subject.content` splits them."""
    return subject.with_parts(subject.text_words(text[: rules.READ_CHARS]))


def _own_words(a: str, b: str, words: TeamWords, min_memories: int
               ) -> tuple[frozenset[str], frozenset[str], list[str], list[str]] | None:
    """Each text's topic words and those the other text lacks (a typo or a plural allowed); None where the team is
    too small to tell, or a text has none or too many to be one topic."""
    if words.n < min_memories:
        return None
    ta, tb = topic_words(a), topic_words(b)
    if not ta or not tb or len(ta) > MAX_WORDS or len(tb) > MAX_WORDS:
        return None
    return (ta, tb, [w for w in ta if not subject.among(w, _with_parts(b))],
            [w for w in tb if not subject.among(w, _with_parts(a))])


def other_topic(a: str, b: str, words: TeamWords, min_memories: int) -> bool:
    """``a`` and ``b`` are about two topics: each has a word the other lacks (a typo or a plural allowed) that is
    rarer in the team than every word they share. False where the team is too small to tell."""
    split = _own_words(a, b, words, min_memories)
    if split is None:
        return False
    ta, tb, only_a, only_b = split
    if not only_a or not only_b:
        return False
    if _names_one_side(a, only_a) and _names_one_side(b, only_b):
        return True  # "the united states had a solar eclipse" / "... happened in india": two subjects in lower case
    # a word they share is a topic word or a name on both sides: "richmond kickers" is "Richmond Kickers", but the
    # "starting quarterback" shares nothing with "Starting in 2011, ..."
    shared = {w for w in ta - set(only_a) if subject.among(w, _topic_or_name(b))} | \
        {w for w in tb - set(only_b) if subject.among(w, _topic_or_name(a))}
    rarest_shared = min((words.df[w] for w in shared), default=None)
    rarest_own = max(min(words.df[w] for w in only_a), min(words.df[w] for w in only_b))
    return rarest_shared is None or rarest_own < rarest_shared


@lru_cache(maxsize=65536)
def _topic_or_name(text: str) -> tuple[str, ...]:
    """The text's topic words and the words of the names it holds (not a capital that only opens a sentence)."""
    return tuple(topic_words(text)) + subject.with_parts(tuple(w for run in subject.read(text).names for w in run))


SAME_TOPIC_WORDS = 2  # shared words rarer than any word one side has alone, from which two texts are on one topic


def same_topic(a: str, b: str, words: TeamWords, min_memories: int) -> bool:
    """``a`` and ``b`` are about one topic: two topic words they share are rarer in the team than every word only one
    of them has ("the raiders made the playoffs" in "my money's on 2002 re ..." and in "From 2016, 'when was ...'
    gets 2016": "raiders" and "playoffs" are rarer than "money's" or "gets"; one rare word shared, "arsenal", is a
    subject, not its attribute), and they ask no two questions. False where the team is too small to tell."""
    split = _own_words(a, b, words, min_memories)
    if split is None:
        return False
    ta, _, only_a, only_b = split
    # a word a text capitalises elsewhere is a name's ("Marina Bay sands and Marina Bay Sands"), not its topic's
    own = [w for w in only_a if w not in _capitalised(a)] + [w for w in only_b if w not in _capitalised(b)]
    rarest_own = min((words.df[w] for w in own), default=words.n + 1)
    shared = [w for w in ta if subject.among(w, _topic_or_name(b)) and words.df[w] < rarest_own]
    return len(shared) >= SAME_TOPIC_WORDS and not other_question(a, b)


@lru_cache(maxsize=65536)
def _capitalised(text: str) -> frozenset[str]:
    """The words the text capitalises past its first, folded."""
    toks = _WORD.findall(rules.strip_label(text[: rules.READ_CHARS]))
    return frozenset(subject.fold(t) for t in toks[1:] if t[0].isupper())


def _names_one_side(text: str, only: list[str]) -> bool:
    """One of the words only this text has is a name written in lower case (:mod:`cased`), outside its value."""
    value = subject.read(text).value
    return any(cased.is_name(w) and not subject.among(w, value) for w in only)


_COUNTS: "weakref.WeakKeyDictionary[MemoryBank, OrderedDict[str, TeamWords]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
TEAMS_KEPT = 256  # teams whose counts a bank keeps; the least recently judged one is read again when it returns


def team_words(bank: "MemoryBank", team: str) -> TeamWords:
    """The team's counts over every memory the bank holds now, read once and then only what was written since
    (a team's writers take turns, so its rows are committed in write order)."""
    with _LOCK:
        teams = _COUNTS.setdefault(bank, OrderedDict())
        words = teams.setdefault(team, TeamWords())
        teams.move_to_end(team)
        while len(teams) > TEAMS_KEPT:
            teams.popitem(last=False)
        for rowid, text in bank.originals_since(team, words.last_rowid):
            words.add(text)
            words.last_rowid = max(words.last_rowid, rowid)
        return words


PHRASE_WORDS = 3  # content words of a shared lower-case phrase from which it is what two memories are about


@lru_cache(maxsize=65536)
def _lower_runs(text: str) -> tuple[tuple[str, ...], ...]:
    """The text's runs of lower-case words (no capital, no digit), folded."""
    runs: list[tuple[str, ...]] = [()]
    for t in _ALNUM.findall(rules.strip_label(text[: rules.READ_CHARS])):
        if t[0].islower() and not any(c.isdigit() for c in t):
            runs[-1] += (subject.fold(t),)
        elif runs[-1]:
            runs.append(())
    return tuple(r for r in runs if r)


def same_phrase(a: str, b: str) -> bool:
    """Both texts hold one lower-case phrase of ``PHRASE_WORDS`` content words or more, word for word, that ends no
    name's attribute ("... of Steele Hall"): the question both answer, stated rather than asked ("Mendocino Complex
    took over the biggest wild fire in california history in 2018" / "From 2020 onward the biggest wild fire in
    california history belonged to August Complex"), so the names around it are its answers, not two subjects."""
    return any(_shared_phrase(ra, rb) for ra in _lower_runs(a) for rb in _lower_runs(b))


def _shared_phrase(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    """The longest common run of words of ``x`` and ``y`` holds ``PHRASE_WORDS`` content words and does not end in
    "of" (an attribute whose name follows)."""
    m = SequenceMatcher(None, x, y, autojunk=False).find_longest_match(0, len(x), 0, len(y))
    best = x[m.a:m.a + m.size]
    while best and best[-1] in rules.STOP_WORDS:
        if best[-1] == "of":
            return False
        best = best[:-1]
    return len([w for w in subject.content(best) if len(w) > 1]) >= PHRASE_WORDS
