"""Open the backend a bank location names: a SQLite path, or a ``postgresql://`` URL.

Apart from :mod:`.backend` because PostgreSQL's backend is built on it: the choice of the
two stands above both (and imports psycopg only where a server is used).
"""

from __future__ import annotations

from pathlib import Path

from memgraft.collab.bank.backend import Backend, SqliteBackend, check_location, is_postgres


def connect(location: str | Path, team: str | None = None) -> Backend:
    """The backend a bank location names: ``postgresql://…`` is PostgreSQL, anything else a SQLite path."""
    check_location(location)
    if is_postgres(location):
        from memgraft.collab.bank.postgres import PostgresBackend  # psycopg only where a server is used

        return PostgresBackend(str(location), team)
    return SqliteBackend(location, team)
