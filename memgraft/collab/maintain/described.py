"""Whether a memory names its subject only by describing it: "the research institute that is located in
Heidelberg", "the college with principals that included Frank Coburn", "the institute founded by Hans Elsässer".

Why: the subject reader (:mod:`memgraft.collab.maintain.subject`) takes the names before a memory's value for its
subject, so such a memory reads as about Heidelberg or Frank Coburn, another subject than the record that names the
institute (the MPIA), and the carry step (:mod:`memgraft.collab.maintain.carry`) must not pass a value to another
subject's memory ("San Francisco" is Holtzman's and Rainier Brewing's). A name inside a description is not who
the memory is about: it sits in a clause or a participle that describes a noun ("that is located in ...",
"founded by ...") or after a describing preposition ("with ...", "under ..."), while a subject's own name is
the owner of the attribute ("the headquarters location of Rainier Brewing Company"). The bundled spaCy parser
reads which, in any wording.
"""

from __future__ import annotations

from typing import Any

from memgraft.collab.maintain import kinds, subject

_CLAUSES = frozenset({"relcl", "acl"})  # "that included ...", "founded by ..."
_DESCRIBING = frozenset({"with", "under", "near", "by"})  # "the college with principals ...", not "of", "at", "for"
_NAME_LINKS = frozenset({"compound", "flat", "appos", "conj", "cc", "pobj", "nmod", "poss", "case", "punct", "agent"})
# the noun a description hangs on is a thing the memory asks about, not the attribute it states: "the position
# held by Georges Pompidou is ..." names Pompidou's position (the sentence's subject), not a described position
_NOT_DESCRIBED = frozenset({"nsubj", "nsubjpass", "ROOT"})


def described(text: str) -> bool:
    """Every word of the names the subject reader takes for ``text``'s subject sits, before its value, inside a
    description of a noun. False where it reads no subject (nothing to tell)."""
    reading = subject.read(text)
    words = {w for run in reading.subject for part in run for w in part.split("-")}
    tokens = list(kinds.parse(text))
    first = reading.value[0].split("-")[0] if reading.value else None
    end = max((i for i, t in enumerate(tokens) if subject.fold(t.text) == first), default=len(tokens))
    found = [t for t in tokens[:end] if subject.fold(t.text) in words]
    return bool(found) and all(_in_description(t) or _after_described(t, tokens) for t in found)


def _after_described(token: Any, tokens: list) -> bool:
    """A name right after a described name and a comma goes with it ("located in Heidelberg, Germany was ...":
    the parser may take "Germany" for the sentence's subject)."""
    i = token.i
    return i >= 2 and tokens[i - 1].text == "," and tokens[i - 2].pos_ == "PROPN" and _in_description(tokens[i - 2])


def _in_description(token: Any) -> bool:
    """Up the parse from a name's word: through its name (compounds, appositions, lists, a preposition's object)
    to a clause or a describing preposition that hangs on a noun; any other link ends the name's phrase."""
    t = token
    for _ in range(12):  # a parse is a tree: its depth bounds the walk
        head = t.head
        if head is t:
            return False
        if t.dep_ in _CLAUSES or (t.dep_ == "prep" and t.lower_ in _DESCRIBING and head.pos_ in ("NOUN", "PROPN")):
            return head.dep_ not in _NOT_DESCRIBED
        if t.dep_ not in _NAME_LINKS and t.dep_ != "prep" and not (t.dep_ in ("dobj", "nsubj", "nsubjpass", "pcomp")
                                                                     and head.dep_ in _CLAUSES):
            return False
        t = head
    return False
