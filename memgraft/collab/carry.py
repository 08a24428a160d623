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

from dataclasses import dataclass
from typing import Sequence

from memgraft.collab.types import Memory
from memgraft.collab.values import stated_value, states


@dataclass(frozen=True)
class Overruled:
    """A note the intra step revised, the memory that overruled it, and the value the note stated."""

    note: Memory
    by: Memory
    value: tuple[str, ...]  # lower-cased words, in order


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
