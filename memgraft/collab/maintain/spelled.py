"""A pair read with one name for its subject: an acronym in one memory that the other spells out is written out.

Why: the subject reader already takes "the MPIA" and "Max Planck Institute for Astronomy" for one subject
(:func:`memgraft.collab.maintain.subject.spells`), but the pair judge reads the words, and to it "who managed
the MPIA" and "the director of Max Planck Institute for Astronomy" share nothing: it read the pair neutral at
1.00, so a record of the institute's next director left the last one valid. Graphiti resolves an entity's names
before it compares edges; here the pair the judge reads names the subject once, the way the other memory does
("who managed the Max Planck Institute for Astronomy": P(contradiction) 0.97). Only the text the judge reads
changes; the memories keep their words.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memgraft.collab.maintain import subject

# three capitals or more, a word of its own ("MPIA", "the MPIA's"), not part of a code ("U-38", "GPT-4")
_ACRONYM = re.compile(r"(?<![\w-])[A-Z]{3,}(?![\w-])")


def _written_out(text: str, other: str) -> str:
    """``text`` with each acronym ``other`` spells (and does not use itself) in ``other``'s words."""
    spelt = {}
    for acr in set(_ACRONYM.findall(text)) - set(_ACRONYM.findall(other)):
        full = subject.spelling(acr, other)
        if full is not None:
            spelt[acr] = full
    if not spelt:
        return text
    return _ACRONYM.sub(lambda m: spelt.get(m[0], m[0]), text)


@lru_cache(maxsize=65536)
def spell_out(a: str, b: str) -> tuple[str, str]:
    """The pair's texts, each acronym the other memory spells out written in its words."""
    return _written_out(a, b), _written_out(b, a)
