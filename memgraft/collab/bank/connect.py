"""Open the backend a bank location names: a SQLite path, or a ``postgresql://`` URL.

Apart from :mod:`.backend` because PostgreSQL's backend is built on it: the choice of the
two stands above both (and imports psycopg only where a server is used).
"""

from __future__ import annotations

from pathlib import Path

from memgraft.collab.bank.backend import Backend, SqliteBackend, is_postgres
from memgraft.collab.bank.errors import BankError


def connect(location: str | Path, team: str | None = None) -> Backend:
    """The backend a bank location names: ``postgresql://…`` is PostgreSQL, anything else a SQLite path."""
    if is_postgres(location):
        from memgraft.collab.bank.postgres import PostgresBackend  # psycopg only where a server is used

        return PostgresBackend(str(location), team)
    if isinstance(location, str) and "://" in location:
        raise BankError(f"bank location {location.split('://')[0]}://… is neither a path (SQLite) nor a "
                        f"postgresql:// URL")
    return SqliteBackend(location, team)
