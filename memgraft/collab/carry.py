"""Carrying an overruled value back: earlier memories that state what a group just overruled.

Why: when a group's team memory overrules an individual note of the same group (the
intra step: "my sheet still lists X as V" against the team's "X is W"), the note's
value V is now known to be out of date *for the subject the team memory names*. The
earlier memories that stated V were usually worded differently (a paraphrased
question, a description of the subject instead of its name: "the research institute
located in Heidelberg" for the MPIA), so the pair judge, which reads one pair at a
time, often cannot tell that they are about the same subject. The note can: it names
the subject as the new record does and the value as the old memory does. So an
earlier valid memory that contains the overruled value word for word, where the team
memory does not, is superseded by the same team memory.

The value of a note is what it says that its overruling memory does not: the last
stretch where their word sequences differ (values end statements; the wording before
it is shared, or differs only in tags such as "Q:"/"A:"). A value that is only common
words ("yes", "the city") is too weak to carry: it needs a name, a number, or several
content words, and it must not be a word the overruling memory also uses.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Sequence

from memgraft.collab import rules
from memgraft.collab.types import Memory

MIN_CONTENT_WORDS = 2  # a value without a name must have this many content words
MIN_CHARS = 4  # and its content words this many letters in all (not "St")

_TOKEN = re.compile(r"[^\W_]+|[^\w\s]", re.UNICODE)  # words, and each punctuation mark
_OPENS = frozenset('?:=—–,.;!()"') | {"is", "was", "are", "were", "as", "be", "been"}  # what a value follows
_CLOSES = frozenset(',.;!?()"')  # what ends a value


@dataclass(frozen=True)
class Overruled:
    """A note the intra step revised, the memory that overruled it, and the value the note stated."""

    note: Memory
    by: Memory
    value: tuple[str, ...]  # lower-cased words, in order


def _tokens(text: str) -> list[str]:
    """Tokens of the text as written, its kind tag and a trailing hedge dropped."""
    toks = _TOKEN.findall(rules.strip_label(text)[: rules.READ_CHARS])
    while toks and not _is_word(toks[-1]):
        toks.pop()
    comma = max((i for i, t in enumerate(toks) if t == ","), default=-1)
    if comma > 0 and not any(_is_word(t) and t != "I" and (t[:1].isupper() or any(c.isdigit() for c in t))
                             for t in toks[comma:]):
        toks = toks[:comma]  # ", as far as I know": how sure the writer is, not what is stated
    return toks


def _is_word(token: str) -> bool:
    return token[:1].isalnum()


def stated_value(note: str, by: str) -> tuple[str, ...]:
    """The value ``note`` states where ``by`` states another: the last stretch of words where they
    differ, widened back to what opens a value ("?", ":", "is", "as", ...) and forward to what
    closes one; lower-cased. Empty when there is none, or it is too weak to carry: a bare number,
    or only common words without a name."""
    a, b = _tokens(note), _tokens(by)
    la, lb = [t.lower() for t in a], [t.lower() for t in b]
    blocks = [op for op in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes()
              if op[0] == "replace" and any(_is_word(t) for t in a[op[1]:op[2]])]
    if not blocks:
        return ()
    _, i1, i2, _, _ = blocks[-1]
    while i1 < i2 and la[i1] in _OPENS:  # "=" against "? A:": the value starts after it
        i1 += 1
    while i1 > 0 and la[i1 - 1] not in _OPENS:
        i1 -= 1
    i2 = next((i for i in range(i1 + 1, len(a)) if la[i] in _CLOSES), len(a))  # ", as far as I know" is no value
    span = [t for t in a[i1:i2] if _is_word(t) or t in "-'&"]
    content = [t for t in span if _is_word(t) and t.lower() not in rules.STOP_WORDS]
    if not any(t.isalpha() for t in content):
        return ()  # "2018", "5": values too common to tell subjects apart
    named = any(t[:1].isupper() and t.isalpha() for t in content)
    if not (named or len(content) >= MIN_CONTENT_WORDS) or sum(map(len, content)) < MIN_CHARS:
        return ()
    return tuple(t.lower() for t in span)


def states(text: str, value: Sequence[str]) -> bool:
    """Whether ``text`` states ``value`` as a whole value: the run, opened and closed as a value is."""
    toks = [t.lower() for t in _tokens(text)]
    kept = [i for i, t in enumerate(toks) if _is_word(t) or t in "-'&"]
    words = [toks[i] for i in kept]
    n = len(value)
    for j in range(len(words) - n + 1):
        if tuple(words[j : j + n]) != tuple(value):
            continue
        first, last = kept[j], kept[j + n - 1]
        if (first == 0 or toks[first - 1] in _OPENS) and (last + 1 == len(toks) or toks[last + 1] in _CLOSES):
            return True
    return False


def overruled(notes: Sequence[tuple[Memory, Memory]]) -> list[Overruled]:
    """(revised note, its overruling memory) pairs -> the ones with a value strong enough to carry."""
    out = []
    for note, by in notes:
        value = stated_value(note.maintained, by.maintained)
        if value:
            out.append(Overruled(note, by, value))
    return out


def carried(memory: Memory, overruled_: Sequence[Overruled]) -> Overruled | None:
    """The overruled note whose value ``memory`` states word for word (and its overruling memory does not)."""
    for o in overruled_:
        if states(memory.maintained, o.value) and not states(o.by.maintained, o.value):
            return o
    return None
