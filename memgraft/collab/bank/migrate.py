"""Each released schema of a bank, and the upgrade from it: a bank opened by newer code is brought up to date.

Why a module: every schema change bumps ``SCHEMA_VERSION`` and ships its step here,
so a bank made by any released version opens (tests/test_collab_bank_migrate.py
builds one of each, the first PostgreSQL schema included); a version this code does
not know, a newer one above all, is refused in words, not met later as a missing column.

- 1: the first schema. Its first PostgreSQL form (79e08a1) lacked ``teams.memories``
  (the team sizes that pick exact or HNSW search) and built an HNSW index over the
  whole table when the embedder was bound.
- 2: ``memories.original_embedding`` (``MemoryBank._upgrade_from_1``). A PostgreSQL
  bank of 79e08a1 upgraded to 2 still had no ``teams.memories``: every search failed.
- 3: PostgreSQL: ``teams.memories`` and its trigger made sure of and recounted, the
  whole-table HNSW index of the first schema dropped while no team needs it, and the
  append-only triggers let one transaction delete one team's rows (``forget``).
  SQLite: no change but the number.
- 4: PostgreSQL: ``memgraft_apply_group``, a group's checks and writes in one statement (``pg_apply``).
  SQLite: no change but the number.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from memgraft.collab.bank.errors import BankError, SchemaTooNew
from memgraft.collab.bank.schema import SCHEMA_VERSION



class UpgradableBank(Protocol):
    """What an upgrade needs of a bank (a :class:`~memgraft.collab.bank.store.MemoryBank`, which imports this
    module: typed by a protocol, so the two stand in one order)."""

    where: str

    def _upgrade_from_1(self) -> dict[str, str]: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def _meta(self) -> dict[str, str]: ...

    def teams(self) -> list[str]: ...

KNOWN = ("1", "2", "3", "4")


def upgrade(bank: UpgradableBank, meta: dict[str, str]) -> dict[str, str]:
    """``meta`` after bringing the bank to ``SCHEMA_VERSION``, one released step at a time."""
    version = meta.get("schema_version")
    if version not in KNOWN:
        if version is not None and version.isdigit() and int(version) > int(SCHEMA_VERSION):
            raise SchemaTooNew(f"{bank.where}: bank schema {version} was written by newer code; this code reads "
                               f"schemas {KNOWN[0]} to {SCHEMA_VERSION}: upgrade memgraft to open it")
        raise BankError(f"{bank.where}: bank schema {version}, this code reads schemas {KNOWN[0]} to "
                        f"{SCHEMA_VERSION}")
    if version == "1":
        meta = bank._upgrade_from_1()
    steps = {"2": lambda db: db.upgrade_to_3(bank.teams()), "3": lambda db: db.upgrade_to_4()}
    while meta.get("schema_version") in steps:
        version = meta["schema_version"]
        with bank.transaction() as db:
            db.lock_schema()
            if bank._meta().get("schema_version") == version:  # another process may have upgraded it meanwhile
                steps[version](db)
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(int(version) + 1),))
        meta = bank._meta()
    return meta
