"""Token-exact chunking: windows of ``size`` tokens of the embedder's tokenizer,
``overlap`` tokens shared between neighbours (stride = size - overlap).

Only a document's last window may be shorter. Each chunk keeps its token and
character offsets; its text is exactly ``document[char_start:char_end]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from memgraft.ids import chunk_id


@dataclass
class Chunk:
    chunk_id: str
    doc_id: str
    text: str
    token_start: int
    token_end: int
    char_start: int
    char_end: int

    @property
    def n_tokens(self) -> int:
        return self.token_end - self.token_start


def window_starts(n_tokens: int, size: int, overlap: int) -> list[int]:
    """Start offsets of the windows over ``n_tokens`` tokens."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"chunk size {size} and overlap {overlap}: need 0 <= overlap < size")
    if n_tokens <= 0:
        return []
    stride = size - overlap
    starts = [0]
    while starts[-1] + size < n_tokens:
        starts.append(starts[-1] + stride)
    return starts


def token_offsets(tokenizer: Any, text: str) -> list[tuple[int, int]]:
    """Character span of every token of ``text`` (no special tokens)."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return [tuple(span) for span in enc["offset_mapping"]]


def chunk_text(tokenizer: Any, doc_id: str, text: str, size: int = 200, overlap: int = 50) -> Iterator[Chunk]:
    offsets = token_offsets(tokenizer, text)
    for start in window_starts(len(offsets), size, overlap):
        end = min(start + size, len(offsets))
        c0, c1 = offsets[start][0], offsets[end - 1][1]
        piece = text[c0:c1]
        yield Chunk(chunk_id(doc_id, start, piece), doc_id, piece, start, end, c0, c1)


CHUNK_COLUMNS = ("chunk_id", "doc_id", "text", "token_start", "token_end", "n_tokens", "char_start", "char_end")


def chunk_batch(tokenizer: Any, batch: dict[str, list], size: int, overlap: int) -> dict[str, list]:
    """Documents (``doc_id``, ``text``) in, one row per chunk out; for ``map_batches``."""
    out: dict[str, list] = {k: [] for k in CHUNK_COLUMNS}
    for doc_id, text in zip(batch["doc_id"], batch["text"]):
        for c in chunk_text(tokenizer, doc_id, text, size, overlap):
            for key in CHUNK_COLUMNS:
                out[key].append(getattr(c, key))
    return out
