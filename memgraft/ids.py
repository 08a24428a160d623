"""Content-hash ids: the same input always gives the same ids, so rebuilds are identical
and incremental updates can tell what changed."""

from __future__ import annotations

import hashlib
import re
import unicodedata


def content_hash(*parts: object, length: int = 16) -> str:
    h = hashlib.sha1()
    for part in parts:
        h.update(str(part).encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()[:length]


def normalise_name(name: str) -> str:
    """The key entities merge on: case, accents, punctuation and spacing ignored."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    text = re.sub(r"^(the|a|an)\s+", "", text.strip())
    text = re.sub(r"[^\w\s]", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def chunk_id(doc_id: str, token_start: int, text: str) -> str:
    return "chunk-" + content_hash(doc_id, token_start, text)


def entity_id(name: str) -> str:
    return "ent-" + content_hash(normalise_name(name))


def relation_id(source_id: str, target_id: str) -> str:
    a, b = sorted((source_id, target_id))
    return "rel-" + content_hash(a, b)
