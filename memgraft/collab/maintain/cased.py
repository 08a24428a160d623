"""Which lower-case words are names: how the bundled LLM's tokenizer spells them.

Why: a real team's questions are often written all in lower case ("the last time the milwaukee
bucks made the playoffs", "... solar eclipse happened in india"), so :mod:`subject`, which reads
names by their capitals, finds none, and a record on one team or country reads as replacing
another's. A byte-pair vocabulary learns its tokens from text in order of frequency, so a word
that is a name in running text has its capitalised form as a token (" India", rank 3,089) and
its lower-case form late or not at all (" india", rank 47,493), while a common word has both
(" president" / " President"). That is a capitalisation prior learned from a large corpus,
shipped with the model we already bundle; nothing here lists names.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

log = logging.getLogger(__name__)

SPACE = "Ġ".encode()  # the byte-level BPE's mark for a token that opens a word, as the file stores it
RATIO = 3.0  # the lower-case form's rank at least this many times the capitalised one's (or no lower-case token)


_reading = threading.Lock()


def _ranks() -> dict[str, int]:
    """The vocabulary's word-opening tokens by rank, read once a process: a caller that comes while another reads
    (a write during ``warm``'s read) waits for that read instead of parsing the file a second time."""
    with _reading:
        return _read()


@lru_cache(maxsize=1)
def _read() -> dict[str, int]:
    """The vocabulary's word-opening tokens by rank (empty where the bundled LLM is not installed: nothing is read)."""
    try:
        import gguf

        from memgraft.models.registry import BUNDLED

        reader = gguf.GGUFReader(BUNDLED["SmolLM2-135M-Instruct"].path())
        field = reader.fields["tokenizer.ggml.tokens"]
    except Exception as e:  # noqa: BLE001 - a missing model leaves the prior unread, never a failed write
        log.warning("no capitalisation prior (%s): lower-case names are not read", e)
        return {}
    out: dict[str, int] = {}
    for rank, i in enumerate(field.data):
        tok = bytes(field.parts[i])
        if tok.startswith(SPACE):
            out.setdefault(tok[len(SPACE):].decode("utf-8", "replace"), rank)
    return out


def warm() -> threading.Thread:
    """Read the prior now, in the background: reading the GGUF's fields costs ~3 s once a process, which
    a service pays at start-up this way rather than inside its first write."""
    thread = threading.Thread(target=_ranks, name="memgraft-cased-prior", daemon=True)
    thread.start()
    return thread


@lru_cache(maxsize=65536)
def is_name(word: str) -> bool:
    """``word``, written in lower case, is a name the corpus capitalises ("india", "milwaukee", "olympics")."""
    if len(word) < 3 or not word.isalpha() or not word.islower():
        return False
    ranks = _ranks()
    cap = ranks.get(word[:1].upper() + word[1:])
    if cap is None:
        return False
    low = ranks.get(word)
    return low is None or low > RATIO * cap


@lru_cache(maxsize=65536)
def common(word: str) -> bool:
    """``word``, written in lower case, is more often written so than capitalised: a sentence's first word
    ("Starting", "Considered"), not a name ("Tom", "Apple")."""
    if len(word) < 3 or not word.isalpha() or not word.islower():
        return False
    ranks = _ranks()
    low, cap = ranks.get(word), ranks.get(word[:1].upper() + word[1:])
    return low is not None and (cap is None or low < cap)
