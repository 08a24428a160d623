"""A PostgreSQL bank's connections: one pool per process and URL, shared by every team's bank on it.

Why: a connection per team held for good filled ``max_connections`` at ~200 teams
and cost ~87 ms per team opened. Here every bank of a process borrows a
connection for one transaction and gives it back, and the team is bound inside
that transaction (``set_config(..., true)``, i.e. ``SET LOCAL``), so nothing of a
team outlives the transaction: the same rule PgBouncer's transaction pooling needs.

A server restart breaks every pooled connection at once. A borrower that meets a
broken one before it has written anything (a read, or a write transaction's
``BEGIN``) has the pool test its idle connections (``ConnectionPool.check``) and
tries again; a lost server is retried for ``reconnect_s`` per attempt (psycopg_pool
backs off exponentially, so a short chain keeps the next attempt at most that far
off once the server is back). While no connection can be had, the borrower gets
``BankUnavailable`` after ``pool_timeout_s``; a statement or lock past its timeout
is ``BankTimeout``. Both are safe to retry: nothing of the failed transaction committed.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

from memgraft.collab.bank import pg_vector
from memgraft.collab.bank.errors import BankError, BankTimeout, BankUnavailable
from memgraft.config import BankSettings

T = TypeVar("T")
TRIES = 3  # a borrower meeting broken connections: test the pool, then try again this many times in all

_settings = BankSettings()
_pools: dict[str, "SharedPool"] = {}
_lock = threading.Lock()


def configure(settings: BankSettings) -> None:
    """The process's pool settings (the service and the pipelines pass ``Settings.bank``); pools made later use
    them, and an existing pool is resized to the new size."""
    global _settings
    with _lock:
        _settings = settings
        for shared in _pools.values():
            shared.pool.resize(min_size=1, max_size=settings.pool_size)
            shared.settings = settings


def current() -> BankSettings:
    return _settings


@dataclass
class SharedPool:
    pool: Any  # psycopg_pool.ConnectionPool
    settings: BankSettings
    users: int = 0
    turns: int = 0  # planning turns held in this process (``team_turn``)


def acquire(url: str, where: str) -> SharedPool:
    """The process's pool for ``url`` (made on first use), counted until ``release``."""
    with _lock:
        shared = _pools.get(url)
        if shared is None:
            shared = _pools[url] = SharedPool(_make(url, where, _settings), _settings)
        shared.users += 1
        return shared


def known(url: str) -> bool:
    """Whether this process has a pool for ``url`` already (its role, extension and tables were checked)."""
    with _lock:
        return url in _pools


def release(url: str) -> None:
    with _lock:
        shared = _pools.get(url)
        if shared is None:
            return
        shared.users -= 1
        if shared.users > 0:
            return
        del _pools[url]
    shared.pool.close()


def _make(url: str, where: str, s: BankSettings) -> Any:
    from psycopg_pool import ConnectionPool

    def setup(conn: Any) -> None:
        pg_vector.register(conn)
        conn.execute(f"SET statement_timeout = {int(s.statement_timeout_s * 1000)}; "
                     f"SET lock_timeout = {int(s.lock_timeout_s * 1000)}; "
                     f"SET idle_in_transaction_session_timeout = {int(s.idle_in_transaction_s * 1000)}")

    return ConnectionPool(url, min_size=1, max_size=s.pool_size, timeout=s.pool_timeout_s,
                          reconnect_timeout=s.reconnect_s, configure=setup, name=where, open=True,
                          kwargs={"autocommit": True, "connect_timeout": max(2, int(s.pool_timeout_s))})


def translate(err: BaseException, where: str) -> BaseException:
    """psycopg's error as the bank's: a timeout is ``BankTimeout``, a lost or unreachable server
    ``BankUnavailable``; anything else (a refused statement) is returned as it is."""
    import psycopg
    from psycopg import errors as pe
    from psycopg_pool import PoolTimeout

    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    s = _settings
    if isinstance(err, pe.LockNotAvailable):
        return BankTimeout(f"{where}: a lock was not granted within bank.lock_timeout_s={s.lock_timeout_s} "
                           f"(another writer of the team holds it); nothing was written: retry")
    if isinstance(err, pe.QueryCanceled):
        return BankTimeout(f"{where}: a statement ran past bank.statement_timeout_s={s.statement_timeout_s}; "
                           f"nothing was written: retry")
    if isinstance(err, pe.IdleInTransactionSessionTimeout):
        return BankTimeout(f"{where}: the transaction sat idle past bank.idle_in_transaction_s="
                           f"{s.idle_in_transaction_s} and the server ended it; nothing was written: retry")
    if isinstance(err, PoolTimeout):
        return BankUnavailable(f"{where}: no connection within bank.pool_timeout_s={s.pool_timeout_s} (the "
                               f"server is unreachable or restarting, or all bank.pool_size={s.pool_size} "
                               f"connections are busy): retry")
    if isinstance(err, psycopg.OperationalError):
        return BankUnavailable(f"{where}: the database is unavailable ({type(err).__name__}: {text}): retry")
    return err


def reraise(err: BaseException, where: str) -> None:
    """Raise ``err`` as the bank's error where it is one (``translate``), else as it is."""
    mine = translate(err, where)
    if mine is err:
        raise err
    raise mine from err


def broken(conn: Any) -> bool:
    return bool(conn.closed or conn.broken)


def with_connection(shared: SharedPool, where: str, fn: Callable[[Any], T]) -> T:
    """``fn(conn)`` on a borrowed connection; one broken by a restart is replaced and ``fn`` run again (so ``fn``
    must be safe to repeat: a read, or a transaction that had not begun)."""
    import psycopg

    for attempt in range(TRIES):
        conn = None
        try:
            with shared.pool.connection() as conn:
                return fn(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as err:
            if conn is not None and broken(conn) and attempt + 1 < TRIES:
                shared.pool.check()  # drop every idle connection the restart broke, not one per request
                continue
            raise translate(err, where) from err
    raise BankError("unreachable")  # pragma: no cover


def write_once(shared: SharedPool, where: str, fn: Callable[[Any], T]) -> T:
    """``fn(conn)`` run once, on a borrowed connection the server has not ended: a write that may have committed
    is never sent again (its lost answer is ``BankUnavailable``; ``outage`` tells whether it went in). A connection
    a restart ended is told before anything is sent (``ended``) and replaced by ``borrow``, with the others it
    broke."""
    import psycopg

    conn = borrow(shared, where, _alive)
    try:
        return fn(conn)
    except (psycopg.OperationalError, psycopg.InterfaceError) as err:
        raise translate(err, where) from err
    finally:
        shared.pool.putconn(conn)


def _alive(conn: Any) -> None:
    """``borrow``'s start for ``write_once``: nothing sent, a connection the server ended closed and refused."""
    import psycopg

    if ended(conn):
        conn.close()  # broken now: ``borrow`` drops it and the others a restart broke, and takes another
        raise psycopg.OperationalError("the server ended this idle connection")


def ended(conn: Any) -> bool:
    """Whether the server has ended this idle connection: an idle session is sent nothing, so input waiting on its
    socket is the server's goodbye (a restart, a terminated backend), or the socket is gone."""
    import select

    if broken(conn):
        return True
    try:
        return bool(select.select([conn.pgconn.socket], [], [], 0)[0])
    except Exception:  # no socket any more
        return True


def plain(shared: SharedPool, where: str, sql: str, params: Any) -> "Rows":
    """One autocommit statement on a borrowed connection (no BEGIN/COMMIT around it), its rows read."""

    def run(conn: Any) -> Rows:
        cur = conn.execute(sql, params, binary=True)
        return Rows(cur.fetchall() if cur.description else [], cur.rowcount)

    return with_connection(shared, where, run)


def borrow(shared: SharedPool, where: str, start: Callable[[Any], Any]) -> Any:
    """A connection kept for a write transaction, ``start`` (its BEGIN, team binding and lock) run on it; one
    broken by a restart is replaced as in ``with_connection``. The caller gives it back (``putconn``)."""
    import psycopg

    for attempt in range(TRIES):
        try:
            conn = shared.pool.getconn()
        except psycopg.OperationalError as err:
            raise translate(err, where) from err
        try:
            start(conn)
            return conn
        except BaseException as err:
            lost = broken(conn)
            shared.pool.putconn(conn)  # the pool rolls back what ``start`` began, or drops a broken one
            if isinstance(err, (psycopg.OperationalError, psycopg.InterfaceError)):
                if lost and attempt + 1 < TRIES:
                    shared.pool.check()
                    continue
                raise translate(err, where) from err
            raise
    raise BankError("unreachable")  # pragma: no cover


TURN_SPACE = 0x6D68  # first key of the planning turns' advisory locks (the write locks use 0x6D67)
TURN_POLL_S = 0.02


@contextmanager
def team_turn(shared: SharedPool, where: str, team: str) -> Iterator[bool]:
    """This writer's turn to plan and write ``team``'s next group, across processes: a session advisory lock on a
    borrowed connection, held while the group is planned (reads, the judge) and committed, so another writer of
    the team plans against what this one commits instead of planning what it then throws away (three processes
    on the same teams made 0.9 groups/s together, one made 3.2).

    Waiting does not hold a connection (``pg_try_advisory_lock`` polled); at most half the pool holds turns, so
    the holders' own reads always find a connection; past ``lock_timeout_s`` of waiting, or with the pool's
    half taken, the writer goes on without a turn (as before: a stale plan is re-planned). Yields whether it
    holds one. A writer that dies ends its session, and so its turn."""
    import psycopg

    deadline = time.monotonic() + shared.settings.lock_timeout_s
    conn = None
    while conn is None and time.monotonic() < deadline:
        with _lock:
            if shared.turns >= max(1, shared.settings.pool_size // 2):
                break
            shared.turns += 1
        try:
            candidate = shared.pool.getconn()
        except psycopg.OperationalError:
            with _lock:
                shared.turns -= 1
            break  # no connection now: the write itself will say why
        try:
            got = candidate.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (TURN_SPACE, team)).fetchone()[0]
        except psycopg.Error:
            got = False
        if got:
            conn = candidate
            break
        shared.pool.putconn(candidate)
        with _lock:
            shared.turns -= 1
        time.sleep(TURN_POLL_S)
    try:
        yield conn is not None
    finally:
        if conn is not None:
            try:
                conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (TURN_SPACE, team))
            except psycopg.Error:
                pass  # a lost session holds no lock
            shared.pool.putconn(conn)
            with _lock:
                shared.turns -= 1


class Rows:
    """A statement's rows, read before its pooled connection went back (``fetchone``/``fetchall``/iteration)."""

    def __init__(self, rows: list[tuple], rowcount: int):
        self._rows, self.rowcount = rows, rowcount

    def fetchone(self) -> tuple | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple]:
        return self._rows

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._rows)
