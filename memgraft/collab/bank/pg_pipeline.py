"""Statements sent together: one round trip to the server for several, where no answer is needed between them.

Why: on PostgreSQL each round trip costs ~0.3-0.5 ms of psycopg and the server, as much as a small team's
whole search on SQLite. An as-of search's two reads (the log since, the guessed hits' rows) and a group's writes
whose answers nobody reads (its team and group rows, its memories, decisions and revisions) go in pipelines:
a group takes 7 round trips, was 12. A mixin of ``PostgresBackend``, whose connection state it uses.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

from memgraft.collab.bank import pg_apply, pool
from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.pg_schema import to_psycopg
from memgraft.collab.bank.schema import iso


class Pipelined:
    """``execute_all``, ``defer`` and ``defer_many`` over the backend's pool and write transaction."""

    _tx: Any
    _deferred: list[tuple[str, Any, bool]]
    _peek: Any
    _team: str | None
    _shared: Any
    where: str

    writes_groups_at_once = True

    if TYPE_CHECKING:  # ``PostgresBackend``'s
        def _locals(self, team: str | None) -> tuple[str, list[Any]] | None: ...

        def use_team(self, team: str) -> None: ...

        def encode_vec(self, vec: Any) -> Any: ...

        def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any: ...

    def execute_all(self, statements: Sequence[tuple[str, dict[str, Any]]]) -> list[list[tuple]]:
        """Outside a write transaction, every statement in one pipeline (BEGIN, the binding, the statements,
        COMMIT: one round trip), in one REPEATABLE READ snapshot, so the rows agree with each other and with a
        pending ``peek_version``; a read-only transaction there never fails to serialise."""
        bind = self._locals(self._team)
        if self._tx is not None or bind is None or len(statements) < 2:
            return super().execute_all(statements)  # type: ignore[misc]  # Backend's: one after another
        peek, self._peek = self._peek, None
        converted = [(to_psycopg(sql), params) for sql, params in statements]

        def run(conn: Any) -> list[list[tuple]]:
            with conn.pipeline():
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                bound = conn.execute(*bind)
                curs = [conn.execute(sql, params, binary=True) for sql, params in converted]
                conn.execute("COMMIT")
            if peek is not None:
                peek[1].version = bound.fetchone()[-1]
            return [cur.fetchall() if cur.description else [] for cur in curs]

        return pool.with_connection(self._shared, self.where, run)

    def defer(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> None:
        """In a write transaction, send ``sql`` with the next statement that is read, or with COMMIT: a write whose
        answer nobody reads needs no round trip of its own (an error in it is raised there, and the transaction
        is rolled back as for any error in it); outside one, now."""
        if self._tx is None:
            self.execute(sql, params)
        else:
            self._deferred.append((to_psycopg(sql), params, False))

    def defer_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if self._tx is None:
            raise BankError("executemany outside a write transaction")  # the bank writes in transactions only
        self._deferred.append((to_psycopg(sql), list(rows), True))

    def _with_deferred(self, conn: Any, sql: str | None = None, params: Any = (), binary: bool = False) -> Any:
        """``sql`` on ``conn`` (the write transaction's, or the one COMMIT goes to), after the deferred statements
        in the same pipeline: one round trip; ``sql`` None sends only them. Returns ``sql``'s cursor."""
        deferred, self._deferred = self._deferred, []
        if not deferred:
            return None if sql is None else conn.execute(sql, params, binary=binary)
        held, cur = [], None
        with conn.pipeline():
            for text, args, many in deferred:
                if many:  # the cursor kept open until the pipeline syncs: one closed earlier drops its results
                    held.append(conn.cursor())
                    held[-1].executemany(text, args)
                else:
                    conn.execute(text, args)
            if sql is not None:
                cur = conn.execute(sql, params, binary=binary)
        for c in held:
            c.close()
        return cur

    def write_group(self, group: Any, decisions: Sequence[Any], vecs: Any,
                    revised: Sequence[Any]) -> tuple[int, int, list[str], list[str]]:
        """``group`` by ``pg_apply``'s function: one statement, in autocommit, so one transaction and one round
        trip (it binds the team and takes the team's lock itself)."""
        if self._tx is not None:
            raise BankError("a bank transaction is already open")
        self.use_team(group.team)  # a bound bank refuses another team here
        args = pg_apply.call_args(group, decisions, vecs, revised, iso(datetime.now(timezone.utc)), self.encode_vec)
        return pg_apply.apply_group(self, args, pg_apply.Refusals(group, decisions))
