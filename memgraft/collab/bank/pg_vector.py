"""pgvector's binary values read as bytes and decoded many at once.

Why: pgvector's own loader builds a ``Vector`` per row (an ``array``, a byteswap, then ``to_numpy`` and
``np.stack``): for the ~80 rows of a small team's as-of read that was a fifth of its time in Python, and
reloading a 20,000-row matrix paid it 20,000 times. A vector's binary form is a 4-byte header (its dimension
and a zero) and big-endian float32s, so the rows of one dimension are one ``frombuffer`` of their bytes.
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

import numpy as np

HEADER = struct.Struct(">HH")  # dimension, unused (0)


def register(conn: Any) -> None:
    """Read ``vector`` values in binary as their bytes (after ``register_vector``, which still dumps them)."""
    from pgvector.psycopg import register_vector
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class RawLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> bytes:
            return bytes(data)

    register_vector(conn)
    oid = conn.adapters.types.get("vector").oid
    conn.adapters.register_loader(oid, RawLoader)


def dim(raw: bytes) -> int:
    """The dimension a stored vector says it has; -1 where its bytes do not hold that many floats."""
    if len(raw) < HEADER.size:
        return -1
    n, unused = HEADER.unpack_from(raw)
    return n if unused == 0 and len(raw) == HEADER.size + 4 * n else -1


def decode(raws: Sequence[bytes], dim_: int) -> np.ndarray:
    """Rows of ``dim_`` floats, native float32: one ``frombuffer`` over every row's bytes, the headers dropped."""
    if not raws:
        return np.zeros((0, dim_), np.float32)
    width = HEADER.size + 4 * dim_
    if any(len(r) != width for r in raws):
        raise ValueError(f"a stored vector is not {dim_}-dimensional")
    rows = np.frombuffer(b"".join(raws), ">f4").reshape(len(raws), dim_ + 1)
    return rows[:, 1:].astype(np.float32)
