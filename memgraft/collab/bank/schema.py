"""The bank's SQLite schema and the codecs between its rows and our objects.

Why here, apart: the triggers are what make ``original`` immutable and ``decisions``
append-only, so the rules the rest of the package relies on are read in one place;
times are stored as fixed-width UTC ISO text so SQL sorts them as time sorts.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, Sequence

import numpy as np

from memgraft.collab.types import Action, Decision, Memory, Relation, as_utc

SCHEMA_VERSION = "4"  # 2: memories.original_embedding; 3, 4: see ``migrate`` (each earlier one is upgraded when opened)
IN_CHUNK = 500  # ids per SQL IN (...) list

# The tables of both backends; the dialect fills in the few column types that differ
# (``postgres.SCHEMA``: identity columns, a pgvector column, the team's memory count).
TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS teams (team TEXT PRIMARY KEY, version INTEGER NOT NULL DEFAULT 0{team_count});
CREATE TABLE IF NOT EXISTS groups (
    team TEXT NOT NULL REFERENCES teams(team), group_id TEXT NOT NULL,
    time TEXT NOT NULL, applied_at TEXT NOT NULL,
    PRIMARY KEY (team, group_id));
CREATE TABLE IF NOT EXISTS memories ({rowid}
    team TEXT NOT NULL, memory_id TEXT NOT NULL, group_id TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('team', 'individual')),
    author TEXT NOT NULL, original TEXT NOT NULL, maintained TEXT NOT NULL, time TEXT NOT NULL,
    relation TEXT CHECK (relation IN ('compatible', 'neutral', 'contradiction')),
    action TEXT CHECK (action IN ('keep', 'revise')),
    valid INTEGER NOT NULL CHECK (valid IN (0, 1)), maintained_at TEXT NOT NULL,
    embedding {vector},  -- of the maintained text
    original_embedding {vector},  -- of the original text: an as-of search reads it instead of embedding again
    PRIMARY KEY (team, memory_id),
    FOREIGN KEY (team, group_id) REFERENCES groups(team, group_id));
CREATE INDEX IF NOT EXISTS memories_by_time ON memories(team, time);
CREATE TABLE IF NOT EXISTS decisions (
    seq {seq}, decision_id TEXT NOT NULL UNIQUE,
    team TEXT NOT NULL, memory_id TEXT NOT NULL, group_id TEXT NOT NULL, decided_at TEXT NOT NULL,
    level TEXT NOT NULL CHECK (level IN ('intra', 'inter')),
    relation TEXT NOT NULL CHECK (relation IN ('compatible', 'neutral', 'contradiction')),
    action TEXT NOT NULL CHECK (action IN ('keep', 'revise')),
    before TEXT NOT NULL, after TEXT NOT NULL,
    valid_before INTEGER NOT NULL, valid_after INTEGER NOT NULL,
    decided_by TEXT NOT NULL, reason TEXT NOT NULL,
    FOREIGN KEY (team, memory_id) REFERENCES memories(team, memory_id),
    FOREIGN KEY (team, group_id) REFERENCES groups(team, group_id));
CREATE INDEX IF NOT EXISTS decisions_by_memory ON decisions(team, memory_id, decided_at, seq);
CREATE INDEX IF NOT EXISTS decisions_by_time ON decisions(team, decided_at);
"""
SCHEMA = TABLES.format(team_count="", rowid="", vector="BLOB", seq="INTEGER PRIMARY KEY AUTOINCREMENT") + """
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS memories_no_delete BEFORE DELETE ON memories
    BEGIN SELECT RAISE(ABORT, 'memories are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS memories_keep_original BEFORE UPDATE OF
    team, memory_id, group_id, type, author, original, time ON memories
    BEGIN SELECT RAISE(ABORT, 'a memory''s original text and provenance never change'); END;
CREATE TRIGGER IF NOT EXISTS groups_no_delete BEFORE DELETE ON groups
    BEGIN SELECT RAISE(ABORT, 'applied groups are never forgotten'); END;
"""

LIVE_COLUMNS = ("memory_id, team, group_id, type, author, original, maintained, time, "
                "relation, action, valid, maintained_at")
AS_OF_SQL = """
SELECT m.memory_id, m.team, m.group_id, m.type, m.author, m.original, COALESCE(d.after, m.original),
       m.time, d.relation, d.action, COALESCE(d.valid_after, 1), COALESCE(d.decided_at, m.time), m.rowid{extra}
FROM memories m LEFT JOIN decisions d ON d.seq = (
    SELECT d2.seq FROM decisions d2
    WHERE d2.team = m.team AND d2.memory_id = m.memory_id AND d2.decided_at <= :as_of
    ORDER BY d2.decided_at DESC, d2.seq DESC LIMIT 1)
WHERE m.team = :team AND {time} <= :as_of"""
# The original's vector where the text then is the original and today's says something else (a memory reworded
# since): the one case the search needs it (``as_of_reads``); sent for every row, it was most of a small team's
# as-of read. Today's text that is the original behind outdated labels (``collab.data.unmarked``: the judge's
# revisions) keeps the original's vector as its own, so it is not sent either; where this test and ``unmarked``
# differ, the search drops a vector it was sent, or embeds the original again.
REWORDED = ("m.maintained <> m.original AND NOT (m.maintained LIKE '[Outdated since %' AND substr(m.maintained, "
            "length(m.maintained) - length(m.original) - 1) = '] ' || m.original)")  # today's text says another thing
ORIGINAL_VECTOR_THEN = f"CASE WHEN COALESCE(d.after, m.original) = m.original AND {REWORDED} THEN m.original_embedding END"
# The memories written by :as_of and decided on after it, as they stood then (AS_OF_SQL's columns, then today's
# text and ORIGINAL_VECTOR_THEN); PostgreSQL has its own (``pg_schema``).
CHANGED_SINCE_SQL = AS_OF_SQL.format(time="{time}", extra=", m.maintained, " + ORIGINAL_VECTOR_THEN) + \
    " AND m.memory_id IN (SELECT memory_id FROM decisions WHERE team = :team AND decided_at > :as_of)"
DECISION_COLUMNS = ("decision_id, team, memory_id, group_id, decided_at, level, relation, action, "
                    "before, after, valid_before, valid_after, decided_by, reason")


def iso(value: datetime) -> str:
    """Fixed-width UTC ISO text: sorts lexically in SQL exactly as the times sort."""
    return as_utc(value).isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def to_us(value: datetime | str) -> int:
    """Microseconds since the epoch: an exact integer for the index's time masks."""
    dt = parse_time(value) if isinstance(value, str) else as_utc(value)
    return (dt - EPOCH) // timedelta(microseconds=1)


def to_blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype="<f4").tobytes()


def row_to_memory(row: Sequence[Any]) -> Memory:
    return Memory(
        memory_id=row[0], team=row[1], group_id=row[2], type=row[3], author=row[4], original=row[5],
        maintained=row[6], time=parse_time(row[7]), relation=None if row[8] is None else Relation(row[8]),
        action=None if row[9] is None else Action(row[9]), valid=bool(row[10]), maintained_at=parse_time(row[11]),
    )


def row_to_decision(row: Sequence[Any]) -> Decision:
    return Decision(
        decision_id=row[0], team=row[1], memory_id=row[2], group_id=row[3], decided_at=parse_time(row[4]),
        level=row[5], relation=Relation(row[6]), action=Action(row[7]), before=row[8], after=row[9],
        valid_before=bool(row[10]), valid_after=bool(row[11]), decided_by=row[12], reason=row[13],
    )


def id_chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), IN_CHUNK):
        yield ids[i:i + IN_CHUNK]


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the tables once; an existing bank is opened without taking the write lock."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        return
    try:
        conn.executescript(f"BEGIN IMMEDIATE; {SCHEMA} INSERT OR IGNORE INTO meta "
                           f"VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise

