"""HiCoMER's memory bank: a SQLite file or a PostgreSQL database, one transaction per group, nothing ever lost.

Why it looks like this:
- A group's new memories, the updater's decisions about them and the mark that
  the group was applied commit together or not at all, so a killed ingest job
  resumes by skipping applied groups (``is_applied``) and never sees half a group.
- ``original`` text is immutable and ``decisions`` is append-only, both enforced
  by SQLite triggers, so the state as of any past time is rebuilt from the log:
  a memory's as-of state is its last decision with ``decided_at <= as_of``
  (``decided_at`` is the triggering group's time, the stream's own clock). Groups
  of a team must arrive in time order, which makes that rebuild at "now" equal
  the live rows.
- The embedding of each memory's *maintained* text is stored with its row
  (float32 BLOB; the embedder's name and dim in ``meta``) and re-embedded when a
  decision revises the text. Per-team numpy matrices are rebuilt from those
  blobs lazily on first use after opening, kept in sync on our own commits, and
  reloaded when another process has written the team (``teams.version``).
- Each row also keeps the vector of its *original* text (``original_embedding``,
  written with the row, never changed). As-of search needs no vector per decision:
  a row whose text then is today's uses the current vector; one whose text then was
  its original (the updater revises a memory at most once) uses the original's; only
  a text revised twice is embedded again (LRU-cached). Before, every revised row
  was embedded per as-of search: at 100k memories ~19,000 texts, minutes with MiniLM.

- A bank location that is a path opens SQLite (embedded, one writer at a time per
  file); a ``postgresql://`` URL opens PostgreSQL with pgvector (``postgres``: many
  writers, teams kept apart by row-level security, exact search over a cached matrix
  up to a team's 100,000 memories as on SQLite, the team's own HNSW index in the database above; one pool
  of connections per process). Both run the same SQL and the same ranking; ``open_bank`` picks.

The package, by idea: ``schema`` (tables, triggers, row codecs), ``backend`` (the
database: SQLite here, PostgreSQL in ``postgres``), ``index`` (a team's vectors and
the ranking), ``vectors`` (embedding and index caching), ``search`` (live and
as-of search), ``transaction`` (one group's write), ``store`` (``MemoryBank``: the
embedder binding, transactions, reads), ``errors``, ``migrate`` (each released schema's
upgrade), ``forget`` (deleting one team's data), ``pool`` (PostgreSQL's connections, timeouts,
restarts), ``outage`` (a group's write retried through a restart); ``scratch`` starts a throwaway PostgreSQL for tests and benchmarks.
"""

from pathlib import Path

from memgraft.collab.bank.errors import (BankError, BankTimeout, BankUnavailable, EmbedderMismatch, GroupAlreadyApplied,
                                         OutOfOrderGroup, SchemaTooNew, StaleDecision)
from memgraft.collab.bank.schema import SCHEMA_VERSION
from memgraft.collab.bank.store import MemoryBank
from memgraft.collab.bank.transaction import GroupTransaction
from memgraft.collab.bank.vectors import EMBED_CACHE_SIZE
from memgraft.models.embedder import Embedder


def open_bank(location: str | Path, embedder: Embedder | None = None, *, team: str | None = None) -> MemoryBank:
    """The bank at ``location``: a path is a SQLite file, ``postgresql://user@host/db`` a PostgreSQL database.

    ``team`` binds the bank to one team: its reads and writes for any other are refused
    (on PostgreSQL the connection then sees no other team's rows at all).
    """
    return MemoryBank(location, embedder, team=team)


__all__ = ["BankError", "BankTimeout", "BankUnavailable", "SchemaTooNew", "EMBED_CACHE_SIZE", "EmbedderMismatch", "GroupAlreadyApplied", "GroupTransaction",
           "MemoryBank", "OutOfOrderGroup", "open_bank", "SCHEMA_VERSION", "StaleDecision"]
