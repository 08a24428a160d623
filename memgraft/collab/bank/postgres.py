"""The bank on PostgreSQL with pgvector: many writers, many teams, one database.

Why it looks like this:
- The tables, codecs and SQL are SQLite's (``schema``), so the rules read the same;
  times stay fixed-width UTC ISO text (sorts as time sorts) and ``memories.rowid``
  is an identity column standing in for SQLite's rowid (write order).
- Triggers refuse what SQLite's triggers refuse (statement-level, so even an
  UPDATE or DELETE that matches no row is refused, and TRUNCATE too).
- Teams are kept apart row by row: row-level security on groups, memories and
  decisions shows a session only the rows of ``memgraft.team``, which the bank sets
  before each team's statements. A superuser or BYPASSRLS role would see every
  row, so the bank refuses to connect as one.
- A team's writers are serialised by ``pg_advisory_xact_lock`` on the team, taken
  first in each group transaction: two writers of one team wait their turn (never
  a refusal), writers of different teams do not wait at all.
- A team up to ``EXACT_MAX_ROWS`` memories is ranked as SQLite ranks it: exactly, by
  numpy over the bank's cached matrix of the team, read from the rows once and brought up
  (only the rows written or decided on since) when ``teams.version`` says another process
  wrote the team (``ranks_team_in_db``; an exact scan in the server was 7x slower at 20,000
  memories); the version is read by the statement that binds the team for the hits' rows
  (``peek_version``), so such a search is one round trip. Above, the dense
  top-N comes from the team's own HNSW index (cosine, a partial index on its rows),
  approximate as HNSW is, built when the team passes that size (``after_group``); the
  few rows it returns are ranked by the same ``index.rank``, so scores and tie-breaks
  are the same. ``teams.memories`` (kept by a trigger) says which.
- Connections come from the process's pool (``pool``), one per transaction; the
  team is bound inside each transaction, so no connection belongs to a team.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from memgraft.collab.bank import pg_search, pg_vector, pool
from memgraft.collab.bank.backend import Backend, Peek, hide_password
from memgraft.collab.bank.errors import BankError, BankUnavailable
from memgraft.collab.bank.index import TeamIndex
from memgraft.collab.bank.pg_schema import (CHANGED_SINCE_SQL, FORGET_SETTING, HAS_SCHEMA, LOCK_SPACE, SCHEMA_LOCK,
                                            TEAM_SETTING, check_role, create_schema_on, ensure_vector,
                                            team_index, team_literal, to_psycopg, upgrade_to_3, upgrade_to_4)
from memgraft.collab.bank.pg_pipeline import Pipelined
from memgraft.collab.bank.pool import Rows

# A team up to this size is ranked exactly (the cached matrix); a larger one through its HNSW index. Measured (2 cores, pgvector
# 0.6.2, bench/collab_search.py, one 100k team of random 384-dim vectors, HNSW's worst case): the exact top-10
# 72 ms p50 at recall 1.000, the index 40 ms at recall 0.342, and keeping the index up made the build 21x
# slower (750 s against 36 s): below this size the index buys little time and costs exactness.
EXACT_MAX_ROWS = 100_000
SIZE_REFRESH = 64  # searches between reads of a team's size (it only picks the plan: exact or HNSW)


class PostgresBackend(Pipelined, Backend):
    """A borrower of the process's pool for its URL (``pool``): a connection per transaction, none held between.

    A statement outside a write transaction runs in a short transaction of its own,
    with the team bound by ``set_config(..., true)``; a write transaction keeps one
    connection from ``begin`` to ``commit``/``rollback``.
    """

    dialect = "postgresql"
    ranks_in_db = True
    peeks_version = True
    team_size = ", memories"  # kept by the memories_counted trigger
    changed_since_sql = CHANGED_SINCE_SQL

    def __init__(self, url: str, team: str | None = None):
        try:
            import psycopg
        except ImportError as err:  # pragma: no cover - a dependency
            raise BankError(f"a PostgreSQL bank needs psycopg and pgvector installed ({err})") from None
        self.location, self.where, self.bound_team = url, hide_password(url), team
        self._psycopg = psycopg
        self._team: str | None = team  # the team the next statements are bound to
        self._ef_search: int | None = None  # bound with each statement once a large team's search set it
        self._sizes: dict[str, tuple[int, int]] = {}  # team -> (memories, searches before reading it again)
        self._tx: Any = None  # the connection a write transaction holds
        self._tx_team: str | None = None
        self._shared: pool.SharedPool | None = None
        self._peek: tuple[str, Peek] | None = None  # (team, box): the next bound statement reads its version too
        self._deferred: list[tuple[str, Any, bool]] = []  # a write tx's statements whose answers nobody reads (``defer``)
        if not pool.known(url):
            self._first_setup()  # once per process and URL: the role, the extension, the tables
        self._shared = pool.acquire(url, self.where)
        try:
            if not self.execute_untied(HAS_SCHEMA).fetchone()[0]:
                self._create_schema()  # dropped and made again since (a test's fresh schema)
            self._indexed: set[str] = set()  # teams whose own HNSW index is known to exist
        except BaseException:
            pool.release(url)
            raise

    # -- setup -------------------------------------------------------------------------------
    def _first_setup(self) -> None:
        """The role, the extension and the tables, on a connection of its own (the pool's connections register
        pgvector's types, which need the extension first)."""
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(self.location, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as err:
            raise BankUnavailable(f"cannot reach the PostgreSQL bank at {self.where}: {str(err).strip()}") from None
        except psycopg.ProgrammingError as err:
            raise BankError(f"{self.where} is not a usable PostgreSQL URL: {str(err).strip()}") from None
        try:
            with conn:
                check_role(conn, self.where)
                ensure_vector(conn, self.where)
                if not conn.execute(HAS_SCHEMA).fetchone()[0]:
                    with conn.transaction():
                        create_schema_on(conn)
        except psycopg.Error as err:
            raise BankError(f"{self.where}: {type(err).__name__}: {str(err).strip()}") from None

    def _create_schema(self) -> None:
        self.begin(None)
        try:
            create_schema_on(self._tx)
            self.commit()
        except BaseException:
            if self.in_transaction:
                self.rollback()
            raise

    def lock_schema(self) -> None:
        """The schema lock, held to the end of the caller's tx; statements after it see what its holder
        committed (READ COMMITTED takes a fresh snapshot per statement)."""
        self.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_SPACE, SCHEMA_LOCK))

    def bind_dim(self, dim: int) -> None:
        """Type the vector column (the HNSW index needs a dimension); in the caller's tx, which holds the
        schema lock (``MemoryBank._bind_embedder``). No index yet: see ``after_group``."""
        for column in ("embedding", "original_embedding"):
            self.execute(f"ALTER TABLE memories ALTER COLUMN {column} TYPE vector({int(dim)})")
        # After the type (a new type resets a column's storage). The maintained text's vector stays in the row,
        # every exact scan reads it; the original's, read only by as-of searches, goes to the TOAST table. Left
        # to the defaults, two 384-dim vectors made rows too wide (~3.2 kB, past the 2 kB TOAST threshold), the
        # scanned vector was moved out, and a 100k exact top-10 took 336 ms instead of 72 (a detoast per row).
        self.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN, "
                     "ALTER COLUMN original_embedding SET STORAGE EXTERNAL")

    def vector_type(self, dim: int | None) -> str:
        return "vector" if dim is None else f"vector({int(dim)})"

    def after_group(self, team: str, memories: int | None = None) -> None:
        """Build ``team``'s own HNSW index once it passes ``EXACT_MAX_ROWS``; before, it is ranked exactly.

        Why per team (a partial index, ``WHERE team = '…'``): a whole-table index made
        every team's writes keep up one index once any team was large, and its scan
        filtered by team after the search, so a small team among many rows got back few
        or none of its own (pgvector's filtered-HNSW recall). A team's own index holds
        only its rows: other teams never pay for it, and its scan needs no team filter.
        Why not from the start: pgvector keeps an index up row by row, which made ingest
        several times slower. Built in one go after the group's commit, under the schema
        lock (two writers crossing at once build it once); the team's writers wait out the
        build (a plain CREATE INDEX: a killed build leaves none); searches meanwhile scan.
        """
        if team in self._indexed:
            return
        if memories is None:  # else the count the group's commit returned (no statement for it)
            row = self.execute_untied("SELECT memories FROM teams WHERE team = %s", (team,)).fetchone()
            memories = None if row is None else row[0]
        if memories is None or memories <= EXACT_MAX_ROWS:
            return
        self.begin(None)
        try:
            self.lock_schema()
            self._build_index(team)
            self.commit()
        except BaseException:
            if self.in_transaction:
                self.rollback()
            raise
        self._indexed.add(team)

    def _build_index(self, team: str) -> None:
        """In the caller's tx, under the schema lock: ``team``'s partial HNSW index, unless it exists."""
        if not self._has_index(team_index(team)):
            self.execute("SET LOCAL statement_timeout = 0")  # a build of minutes is not a stalled statement
            self.execute_untied(f"CREATE INDEX {team_index(team)} ON memories USING hnsw (embedding vector_cosine_ops) "
                                f"WHERE team = {team_literal(team)}")

    def upgrade_to_3(self, teams: list[str]) -> None:
        """Schema 3 (``migrate``), in the caller's tx under the schema lock (``pg_schema.upgrade_to_3``)."""
        upgrade_to_3(self, teams, EXACT_MAX_ROWS)

    def upgrade_to_4(self) -> None:
        upgrade_to_4(self)

    def ranks_team_in_db(self, team: str) -> bool:
        """A large team from its HNSW index (``top_n``); a smaller one from the bank's cached matrix, as on SQLite:
        a 20,000-memory team's exact scan took 48 ms in the server, numpy over the matrix 7 ms (collab_scale)."""
        return self._team_size(team) > EXACT_MAX_ROWS

    def team_turn(self, team: str) -> Any:
        return pool.team_turn(self._shared, self.where, team)

    def forget(self, team: str) -> None:
        """Delete ``team``'s rows, in the caller's tx for that team: the append-only triggers let this
        transaction's DELETEs pass (``FORGET_SETTING``, local to it), row-level security keeps them to the team."""
        self.execute("SELECT set_config(?, 'on', true)", (FORGET_SETTING,))
        for table in ("decisions", "memories", "groups"):
            self.execute(f"DELETE FROM {table} WHERE team = ?", (team,))
        self.execute("UPDATE teams SET memories = 0 WHERE team = ?", (team,))
        self.execute(f"DROP INDEX IF EXISTS {team_index(team)}")
        self._indexed.discard(team)

    def _has_index(self, name: str) -> bool:
        """Read from the catalog table, not ``to_regclass``: an advisory lock does not refresh the catalog cache,
        so after waiting for another builder's lock the cache may not know its index yet."""
        return self.execute("SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
                            "AND indexname = ?)", (name,)).fetchone()[0]

    # -- statements --------------------------------------------------------------------------
    def _locals(self, team: str | None) -> tuple[str, list[Any]] | None:
        """The statement that binds ``team`` (and a non-default ``hnsw.ef_search``) for one transaction; with a
        ``peek_version`` pending, it reads that team's version too (its last column)."""
        calls, args = [], []
        if team is not None:
            calls.append("set_config(%s, %s, true)")
            args += [TEAM_SETTING, team]
        if self._ef_search is not None:
            calls.append("set_config('hnsw.ef_search', %s, true)")
            args.append(str(self._ef_search))
        if self._peek is not None and calls:
            calls.append("(SELECT version FROM teams WHERE team = %s)")
            args.append(self._peek[0])
        return ("SELECT " + ", ".join(calls), args) if calls else None

    @contextmanager
    def peek_version(self, team: str) -> Iterator[Peek]:
        """The team's ``teams.version`` read by the statement that binds the team for the next read of its rows
        (the same round trip, the same transaction), so a search from the cached matrix checks the matrix with the
        statement that fetches its hits: one round trip a search, not two. Outside a write transaction only."""
        box = Peek()
        if self._tx is not None:
            yield box
            return
        self._peek = (team, box)
        try:
            yield box
        finally:
            self._peek = None

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        # () still converts: a doubled "%" is one again. Binary results: a vector then loads with one
        # frombuffer, not by parsing its text (reading 20,000 384-dim vectors: 0.25 s against 1.35 s)
        return self.execute_untied(to_psycopg(sql), params)

    def execute_shared(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """Outside a write transaction, one autocommit statement, no team bound (``teams`` and ``meta`` have no
        row-level security): BEGIN, binding and COMMIT around it cost ~1 ms of psycopg's Python on 2 busy cores."""
        if self._tx is not None:
            return self.execute(sql, params)
        return pool.plain(self._shared, self.where, to_psycopg(sql), params)

    def execute_untied(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """``sql`` in psycopg's placeholders: on the write transaction's connection, or in a short transaction
        of its own on a borrowed one (the team bound, ``SET LOCAL``); a broken connection is replaced once."""
        if self._tx is not None:
            try:
                return self._with_deferred(self._tx, sql, params, binary=True)  # the deferred writes with it
            except self._psycopg.Error as err:
                pool.reraise(err, self.where)
        bind = self._locals(self._team)
        if bind is None:
            return pool.plain(self._shared, self.where, sql, params)

        peek, self._peek = self._peek, None  # the first statement after peek_version reads it

        def run(conn: Any) -> Rows:
            # one round trip, one transaction: an autocommit pipeline's statements up to its sync are one implicit
            # transaction, so the binding (``set_config(..., true)``) holds for the statement, and no BEGIN and
            # COMMIT are needed around them (two statements of psycopg's Python fewer)
            with conn.pipeline():
                bound = conn.execute(*bind)
                cur = conn.execute(sql, params, binary=True)
            if peek is not None:
                peek[1].version = bound.fetchone()[-1]
            return Rows(cur.fetchall() if cur.description else [], cur.rowcount)

        return pool.with_connection(self._shared, self.where, run)

    def id_filters(self, column: str, ids: Sequence[str]) -> Iterator[tuple[str, dict[str, Any]]]:
        """One array parameter, however many ids: as-of search at 100k read ~20,000 ids, and
        40 statements of 500 placeholders each took most of its time."""
        yield f"{column} = ANY(:ids)", {"ids": list(ids)}

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.defer_many(sql, rows)
        try:
            self._with_deferred(self._tx)  # sent now, with anything deferred before it
        except self._psycopg.Error as err:
            pool.reraise(err, self.where)

    def begin(self, team: str | None) -> None:
        """Borrow a connection for the transaction; one a restart broke is replaced (nothing was written yet)."""
        if self._tx is not None:
            raise BankError("a bank transaction is already open")
        if team is not None:
            super().use_team(team)  # a bound bank refuses another team before any connection is taken

        def start(conn: Any) -> Any:
            conn.execute("BEGIN")
            if team is not None:
                conn.execute("SELECT set_config(%s, %s, true), pg_advisory_xact_lock(%s, hashtext(%s))",
                             (TEAM_SETTING, team, LOCK_SPACE, team))
            return conn

        self._tx, self._tx_team = pool.borrow(self._shared, self.where, start), team
        if team is not None:
            self._team = team

    def commit(self) -> None:
        conn, self._tx = self._tx, None
        try:
            self._with_deferred(conn, "COMMIT")
        except self._psycopg.Error as err:
            pool.reraise(err, self.where)
        finally:
            self._shared.pool.putconn(conn)

    def rollback(self) -> None:
        conn, self._tx = self._tx, None
        self._deferred.clear()
        if conn is None:
            return
        try:
            if not pool.broken(conn):
                conn.execute("ROLLBACK")
        except self._psycopg.Error:
            pass  # a lost connection has no transaction left; the pool drops it
        finally:
            self._shared.pool.putconn(conn)

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    def use_team(self, team: str) -> None:
        super().use_team(team)
        self._team = team
        if self._tx is not None and team != self._tx_team:
            self.execute_untied("SELECT set_config(%s, %s, true)", (TEAM_SETTING, team))
            self._tx_team = team

    # -- vectors -----------------------------------------------------------------------------
    def encode_vec(self, vec: np.ndarray) -> np.ndarray:
        return np.asarray(vec, dtype=np.float32)

    def decode_vecs(self, raws: Sequence[Any], dim: int) -> np.ndarray:
        return pg_vector.decode(raws, dim)

    def vec_dim(self, raw: Any) -> int:
        return pg_vector.dim(raw)

    def top_n(self, team: str, q: np.ndarray, k: int, dim: int, valid_only: bool, want_team: bool | None,
              until: str | None, exclude: Sequence[str]) -> TeamIndex:
        """The team's rows nearest ``q`` by cosine (``pg_search.top_n``)."""
        return pg_search.top_n(self, team, q, k, dim, valid_only, want_team, until, exclude)

    @property
    def ef_search_setting(self) -> int:
        """``BankSettings.hnsw_ef_search``, read at each search: ``pool.configure`` may change it."""
        return self._shared.settings.hnsw_ef_search if self._shared is not None else pool.current().hnsw_ef_search

    def set_ef_search(self, ef: int) -> None:
        """The HNSW scan's candidates for this bank's next searches: set now inside a write transaction, else
        bound with the team in each statement's own transaction (``_locals``)."""
        if ef != self._ef_search and self._tx is not None:
            self.execute("SELECT set_config('hnsw.ef_search', ?, true)", (str(ef),))
        self._ef_search = ef

    def _team_size(self, team: str) -> int:
        """The team's memory count (which plan its searches take), read again every ``SIZE_REFRESH`` searches."""
        size, left = self._sizes.get(team, (0, 0))
        if left <= 0:
            row = self.execute_shared("SELECT memories FROM teams WHERE team = ?", (team,)).fetchone()
            size, left = (0 if row is None else row[0]), SIZE_REFRESH
        self._sizes[team] = (size, left - 1)
        return size

    def close(self) -> None:
        if self._tx is not None:
            self.rollback()
        if self._shared is not None:
            self._shared = None
            pool.release(self.location)
