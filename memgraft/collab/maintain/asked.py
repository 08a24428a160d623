"""Where a memory text asks the question it answers: a quoted question, or one asked inside a sentence.

Apart from :mod:`topic` (which reads a question's words) so that :mod:`subject` can leave the
question out of the value it reads: "Starting in 2019: 49ers, if you ask who did green bay
lose to in the playoffs last year" states "49ers", not "in the playoffs last year" after the
question's own "to". Read off quotes and English's question words, not a template's words.
"""

from __future__ import annotations

import re

# the words a question opens with: a quote is read as a question only when it opens so
ASKING = frozenset("who whom whose what which when where why how who's what's when's where's how's is are was were "
                   "do does did can could will would has have had should".split())
# a quoted question without its "?" ("The answer to 'who won the most gold medals' changed"): a quote that no
# word touches from outside, to the next such quote ("who's" inside it is a word's apostrophe)
QUOTED = re.compile(r"(?<!\w)['‘\"“]((?:[^'‘’\"“”]|(?<=\w)['’](?=\w)){8,200}?)['’\"”](?!\w)")
# a question asked inside a sentence without marks ("If anyone asks who did the celtics draft this year, the
# answer ..."): the verb "ask" and a question word, to the clause's end; or, after "if anyone asks" (you, someone),
# a lower-case clause that is no person asked ("If anyone asks the most liked youtube video in the world, ...")
_ASKING_CLAUSE = (r"(?:\bask(?:s|ed|ing)?\s+((?:who|whom|whose|what|which|when|where|why|how)\b[^.!:;?,\"“”«»—–()]{8,200})|"
                  r"\b(?:if|when)\s+(?:you|anyone|anybody|someone|somebody|people|one)\s+asks?\s+"
                  r"((?!(?:me|us|him|her|them|you|about|for|if|whether|around)\b)(?-i:[a-z])[^.!:;?,\"“”«»—–()]{8,200}))")
ASKED = re.compile(_ASKING_CLAUSE, re.IGNORECASE)
# the whole clause that asks it, from the clause's start: what :func:`without_questions` cuts
_ASKED_CLAUSE = re.compile(r"(?:^|(?<=[,;]))[^,.;:!?\"“”]*?" + _ASKING_CLAUSE, re.IGNORECASE)


def asked_questions(text: str) -> list[str]:
    """The questions asked inside the text's sentences without marks (:data:`ASKED`)."""
    return [m.group(1) or m.group(2) for m in ASKED.finditer(text)]


def opens(question: str) -> bool:
    """The span opens as a question does ("who ...", "how many ...", "is ...")."""
    words = question.split()
    return bool(words) and words[0].lower().replace("’", "'") in ASKING


def _is_question(quoted: str) -> bool:
    """Three words or more that open as a question does, or that are all lower case: a team quotes what it is
    asked in the asker's words ("'dragon ball super how many episodes are there'", "'the most expensive
    skyscraper in the world'"); a quoted title or name is capitalised."""
    return len(quoted.split()) >= 3 and (opens(quoted) or (quoted[:1].islower() and names_none(quoted)))


def quoted_questions(text: str) -> list[str]:
    """The quoted spans of three words or more that open as questions do."""
    return [q for q in QUOTED.findall(text) if _is_question(q)]


def names_none(question: str) -> bool:
    """No capital past the question's first word: it names no subject ("the Swedish Lapland Ranger Regiment")."""
    return not any(w[:1].isupper() for w in question.split()[1:])


def without_questions(text: str) -> str:
    """The text with its lower-case quoted questions and the clauses that ask one cut out: what is left states
    the answer. A question that names its subject stays: the subject is read from it."""
    out = _ASKED_CLAUSE.sub(lambda m: " " if names_none(m.group(0).strip()) else m.group(0), text)
    return QUOTED.sub(lambda m: " " if _is_question(m.group(1)) and names_none(m.group(1)) else m.group(0), out)
