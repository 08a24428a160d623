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

The value of a note is what it says where its overruling memory says something else, as a
whole value (:func:`memgraft.collab.maintain.values.stated_value`: the last differing stretch, widened
to what opens and closes a value). A bare number, a lone common word or a trailing hedge
(", as far as I know") is never carried: such values are shared by too many subjects. An
earlier memory must state the value whole too ("Adjustment Center at San Quentin State
Prison" does not state "San Quentin State Prison"), and the overruling memory must not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from memgraft.collab.types import Memory
from memgraft.collab.maintain.values import stated_value, states


@dataclass(frozen=True)
class Overruled:
    """A note the intra step revised, the memory that overruled it, and the value the note stated."""

    note: Memory
    by: Memory
    value: tuple[str, ...]  # lower-cased words, in order


def overruled(notes: Sequence[tuple[Memory, Memory]]) -> list[Overruled]:
    """(revised note, its overruling memory) pairs -> the ones with a value strong enough to carry, which the
    overruling memory does not state itself."""
    out = []
    for note, by in notes:
        value = stated_value(note.maintained, by.maintained)
        if value and not states(by.maintained, value):
            out.append(Overruled(note, by, value))
    return out


def carried(memory: Memory, overruled_: Sequence[Overruled]) -> Overruled | None:
    """The overruled note whose value ``memory`` states word for word."""
    return next((o for o in overruled_ if states(memory.maintained, o.value)), None)
