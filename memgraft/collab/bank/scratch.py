"""A throwaway PostgreSQL with pgvector (the ``pgserver`` wheel, a dev dependency) for tests and benchmarks.

Why here: the tests and the benchmarks need the same server set up the same way.
Run as root, pgserver starts the server as a system user ``pgserver`` it adds
(``useradd``) and opens the folders above its data directory to it, so the data
lives in a ``mkdtemp`` folder of its own (under pytest's tree, another pytest run
resets the modes and shuts the server out of its data). Banks connect as
``memgraft``, an ordinary role: a superuser would bypass the banks' row-level
security, and the bank refuses one. Each database is a copy of a template that
already has the ``vector`` extension (creating it needs a superuser). The server
is thrown away after, so it does not sync to disk (its shutdown checkpoint took
8 s otherwise).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from pathlib import Path

ROLE = "memgraft"
TEMPLATE = "bank_template"


class ScratchPostgres:
    """One server; ``database()`` makes a fresh, empty bank database and returns its URL."""

    def __init__(self, root: str | Path | None = None):
        import psycopg

        with warnings.catch_warnings():  # platformdirs' notice on a machine with no login session (CI, containers):
            # pgserver's import picks the user's runtime folder for its lock file; /tmp/runtime-UID serves as well
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            import pgserver

        self.root = Path(tempfile.mkdtemp(prefix="memgraft-pg-", dir=root))
        self._server = pgserver.get_server(self.root / "data", cleanup_mode="delete")
        self._made = itertools.count()
        self._server.psql("ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET synchronous_commit = off; "
                          "ALTER SYSTEM SET full_page_writes = off; SELECT pg_reload_conf();")
        self._server.psql(f"CREATE ROLE {ROLE} LOGIN; CREATE DATABASE {TEMPLATE} OWNER {ROLE};")
        with psycopg.connect(self._server.get_uri(database=TEMPLATE), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")

    def database(self) -> str:
        name = f"bank_{os.getpid()}_{next(self._made)}"
        self._server.psql(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} OWNER {ROLE};")
        return self._server.get_uri(database=name).replace("://postgres:@", f"://{ROLE}@", 1)

    def configure(self, **settings: str) -> None:
        """``ALTER SYSTEM SET`` each setting, then restart so that those read only at start (``shared_buffers``)
        hold: as an operator sizes a server for its data."""
        for name, value in settings.items():
            self._server.psql(f"ALTER SYSTEM SET {name} = '{value}';")
        self.pause()
        self.resume()

    def pause(self) -> None:
        """Stop the server as an operator's restart does (``pg_ctl stop -m fast``: sessions are ended)."""
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata, user=self._server.system_user)

    def resume(self) -> None:
        """Start it again on the same socket folder, waiting until it accepts connections."""
        from urllib.parse import parse_qs, urlsplit

        from pgserver._commands import pg_ctl

        socket_dir = parse_qs(urlsplit(self._server.get_uri()).query)["host"][0]
        pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(self._server.log), "start"],
               pgdata=self._server.pgdata, user=self._server.system_user, timeout=30)

    def stop(self) -> None:
        self._server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)
