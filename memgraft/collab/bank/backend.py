"""Where the bank's SQL runs: one SQLite file (the embedded default) or PostgreSQL with pgvector.

Why a layer: the bank's rules (one transaction per group, the append-only log, as-of
rebuilds, the ranking) are written once, in the other modules, against this small
interface. What differs between the databases lives here and in ``postgres``:
connecting, the write lock, placeholders, how a vector is stored, the row-level
team setting, and where a team's dense top-N comes from (SQLite: this process's
cached matrix, ``index``; PostgreSQL: the database's HNSW index).

Shared SQL is written with SQLite's ``?`` / ``:name`` placeholders; a backend
translates them if its driver wants others.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.schema import CHANGED_SINCE_SQL, SCHEMA, create_schema, id_chunks, to_blob

if TYPE_CHECKING:
    from memgraft.collab.bank.index import TeamIndex

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Peek:
    """What ``peek_version`` saw: the team's version, or None where the backend reads none with the statement."""

    version: int | None = None


class Backend:
    """One open connection to a bank's database; the bank serialises its use (``MemoryBank._lock``)."""

    dialect: str
    location: str  # as given: opens the same bank again
    where: str  # for messages: the location without a password
    ranks_in_db = False  # True: a team's top-N may come from ``top_n`` (``ranks_team_in_db``); False: never
    team_size = ""  # the column of ``teams`` that counts a team's memories, as ", name" ("": none kept)
    peeks_version = False  # ``peek_version`` reads the version with a statement (PostgreSQL); else it reads none
    time_no_index = ""  # prefix that keeps the planner off the time index for lookups by key
    team_no_index = ""  # prefix that keeps the planner off the team indexes for a scan by write order
    bound_team: str | None = None  # set: this connection serves one team and refuses the others
    changed_since_sql = CHANGED_SINCE_SQL  # the as-of search's read of the log ({time}: the time column)
    writes_groups_at_once = False  # True: ``write_group`` checks and writes a whole group in one statement

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        raise NotImplementedError

    def execute_all(self, statements: Sequence[tuple[str, dict[str, Any]]]) -> list[list[tuple]]:
        """Each statement's rows, in order: reads that need no answer from each other. PostgreSQL sends them
        in one round trip and one snapshot; here they run one after another."""
        return [list(self.execute(sql, params).fetchall()) for sql, params in statements]

    def id_filters(self, column: str, ids: Sequence[str]) -> Iterator[tuple[str, dict[str, Any]]]:
        """``column`` among ``ids``, as (SQL condition, named parameters), in as few statements as the
        dialect allows: here IN lists of ``IN_CHUNK`` (SQLite's cap on parameters)."""
        for part in id_chunks(list(ids)):
            yield (f"{column} IN ({','.join(f':i{i}' for i in range(len(part)))})",
                   {f"i{i}": x for i, x in enumerate(part)})

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def defer(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> None:
        """A write whose answer nobody reads: PostgreSQL sends it with the transaction's next read or its COMMIT
        (one round trip for several), an error in it raised there; here it runs now."""
        self.execute(sql, params)

    def defer_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """``executemany`` as ``defer`` sends it."""
        self.executemany(sql, rows)

    def begin(self, team: str | None) -> None:
        """Open a write transaction; with ``team``, writers of that team wait here for each other."""
        raise NotImplementedError

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        self.execute("ROLLBACK")

    @property
    def in_transaction(self) -> bool:
        raise NotImplementedError

    def use_team(self, team: str) -> None:
        """Make ``team`` the one whose rows the next statements may see (a bound bank refuses others)."""
        if self.bound_team is not None and team != self.bound_team:
            raise BankError(f"this bank is opened for team {self.bound_team!r} only, not {team!r}")

    def lock_schema(self) -> None:
        """In the caller's tx: wait for any other process changing the bank's schema or binding its embedder
        (no-op on SQLite, whose write transaction already holds the whole file)."""

    def vector_type(self, dim: int | None) -> str:
        """The SQL type of a vector column (for an added column: ``MemoryBank``'s upgrade)."""
        return "BLOB"

    def bind_dim(self, dim: int) -> None:
        """The bank's embedder is now known: fix the vector column's dimension (no-op where untyped); called
        under ``lock_schema``."""

    def forget(self, team: str) -> None:
        """Delete ``team``'s rows (groups, memories, decisions) in the caller's write tx for that team."""
        raise NotImplementedError

    def team_turn(self, team: str) -> Any:
        """A context in which this writer plans and writes ``team``'s next group before any other process's
        writer does (PostgreSQL); SQLite's writers of one file take turns at its lock already."""
        return nullcontext(False)

    def upgrade_to_3(self, teams: list[str]) -> None:
        """Schema 2 to 3 in the caller's tx (``migrate``): nothing changes in SQLite's tables."""

    def upgrade_to_4(self) -> None:
        """Schema 3 to 4 in the caller's tx (``migrate``): nothing changes in SQLite's tables."""

    def write_group(self, group: Any, decisions: Sequence[Any], vecs: np.ndarray | None,
                    revised: Sequence[np.ndarray | None]) -> tuple[int, int, list[str], list[str]]:
        """``group`` and its decisions checked and written in one statement and committed (``pg_apply``)."""
        raise NotImplementedError(f"{self.dialect} writes a group statement by statement (group_transaction)")

    def execute_shared(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """``execute`` for a statement on the tables every team may read (``teams``, ``meta``): on PostgreSQL it
        needs no team bound, so it goes as one plain statement (the version check before every search)."""
        return self.execute(sql, params)

    @contextmanager
    def peek_version(self, team: str) -> Iterator["Peek"]:
        """Read ``team``'s ``teams.version`` along with the next statement on its rows, in the same round trip, where
        the backend can (PostgreSQL: in the statement that binds the team); else the peek stays None and the
        caller reads the version itself (SQLite: an in-process read)."""
        yield Peek()

    def ranks_team_in_db(self, team: str) -> bool:
        """Whether ``team``'s top-N comes from ``top_n`` (True) or from the bank's cached matrix (False)."""
        return self.ranks_in_db

    def after_group(self, team: str, memories: int | None = None) -> None:
        """A group of ``team`` has committed: grow what the search needs (PostgreSQL's HNSW index); outside any tx."""

    def top_n(self, team: str, q: np.ndarray, k: int, dim: int, valid_only: bool, want_team: bool | None,
              until: str | None, exclude: Sequence[str]) -> TeamIndex:
        """The team's rows nearest ``q`` (where ``ranks_in_db``), filtered, as a small index in write order."""
        raise NotImplementedError

    def encode_vec(self, vec: np.ndarray) -> Any:
        raise NotImplementedError

    def decode_vecs(self, raws: Sequence[Any], dim: int) -> np.ndarray:
        raise NotImplementedError

    def vec_dim(self, raw: Any) -> int:
        raise NotImplementedError

    @property
    def journal_mode(self) -> str | None:
        return None

    def close(self) -> None:
        raise NotImplementedError


class SqliteBackend(Backend):
    """One SQLite file in WAL mode: writers take the file's lock (``BEGIN IMMEDIATE``), readers never wait."""

    dialect = "sqlite"
    time_no_index = "+"  # SQLite: ``+m.time`` is not an indexed column, so a lookup by id uses the key
    team_no_index = "+"  # SQLite: ``+team``, so ``rowid > ?`` walks the rows written since, not the whole team

    def __init__(self, path: str | Path, team: str | None = None):
        self.location = self.where = str(path)
        self.bound_team = team
        if self.location != ":memory:":
            Path(self.location).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.location, isolation_level=None, check_same_thread=False, timeout=30.0)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a power cut may lose the last groups, never corrupt
            self._conn.execute("PRAGMA foreign_keys=ON")
            create_schema(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    def begin(self, team: str | None) -> None:
        if team is not None:
            self.use_team(team)
        self._conn.execute("BEGIN IMMEDIATE")  # one writer per file: waits up to the 30 s timeout

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def encode_vec(self, vec: np.ndarray) -> bytes:
        return to_blob(vec)

    def decode_vecs(self, raws: Sequence[Any], dim: int) -> np.ndarray:
        return np.frombuffer(b"".join(raws), "<f4").reshape(-1, dim)

    def vec_dim(self, raw: Any) -> int:
        return len(raw) // 4 if len(raw) % 4 == 0 else -1

    def forget(self, team: str) -> None:
        """Delete ``team``'s rows in the caller's write tx: the delete-refusing triggers are dropped and made again
        inside it (SQLite's DDL is transactional, and the write lock keeps every other writer out meanwhile)."""
        triggers = re.findall(r"CREATE TRIGGER IF NOT EXISTS (\w+) BEFORE DELETE ON \w+\s+BEGIN.*?END;", SCHEMA, re.S)
        for name in triggers:
            self._conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        for table in ("decisions", "memories", "groups"):
            self._conn.execute(f"DELETE FROM {table} WHERE team = ?", (team,))
        for statement in re.findall(r"CREATE TRIGGER IF NOT EXISTS \w+ BEFORE DELETE ON \w+\s+BEGIN.*?END;", SCHEMA,
                                    re.S):
            self._conn.execute(statement)

    @property
    def journal_mode(self) -> str:
        return self._conn.execute("PRAGMA journal_mode").fetchone()[0]

    def close(self) -> None:
        self._conn.close()


def hide_password(url: str) -> str:
    """A URL fit for messages and logs: ``postgresql://user:***@host/db`` (and ``password=***`` in its query)."""
    url = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


def is_postgres(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def check_location(location: str | Path) -> None:
    """Refuse a location that is neither a path nor a ``postgresql://`` URL, before any work starts (the ingest
    pipeline checks it before Ray does). A SQLAlchemy URL (``postgresql+psycopg://``) is named as one."""
    if not isinstance(location, str) or is_postgres(location) or "://" not in location:
        return
    scheme = location.split("://")[0]
    hint = " (a SQLAlchemy dialect prefix: write postgresql:// for the bank)" if scheme.startswith(
        ("postgresql+", "postgres+")) else ""
    raise BankError(f"bank location {scheme}://… is neither a path (SQLite) nor a postgresql:// URL{hint}")

