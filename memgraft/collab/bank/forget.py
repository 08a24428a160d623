"""Deleting one team's data: the one way past the append-only log, for a team that leaves or must be erased.

Why its own module and command: the triggers refuse every DELETE, so that no code
path forgets a memory by accident; this one, asked for by name, deletes one team's
groups, memories and decisions in one transaction (the team's writers wait for it),
lifting the refusal for that transaction only. The team's name stays in ``teams``
with its version bumped, so another process that cached the team's vectors drops them.

    python -m memgraft.collab.bank.forget BANK TEAM --yes
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.store import MemoryBank
from memgraft.collab.bank.stored_index import FORGOTTEN


def forget_team(bank: MemoryBank, team: str) -> int:
    """Delete every row of ``team``; returns how many memories it held. Nothing of other teams is touched."""
    with bank._lock:
        with bank.transaction(team) as db:
            n = db.execute("SELECT COUNT(*) FROM memories WHERE team = ?", (team,)).fetchone()[0]
            db.forget(team)
            db.execute("UPDATE teams SET version = version + 1 WHERE team = ?", (team,))
            # counted, so another process's cached matrix of the team is read again whole, not brought up by the
            # rows written since (``stored_index.refresh_index``): SQLite reuses the deleted rows' rowids
            db.execute("INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE "
                       "SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)", (FORGOTTEN + team,))
        bank._indexes.pop(team, None)
        bank._rows_held.pop(team, None)
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memgraft.collab.bank.forget", description=__doc__.split("\n")[0])
    parser.add_argument("bank", help="a SQLite bank file or a postgresql:// URL")
    parser.add_argument("team")
    parser.add_argument("--yes", action="store_true", help="really delete (there is no undo but a backup)")
    args = parser.parse_args(argv)
    if not args.yes:
        parser.error("deleting a team's data cannot be undone: add --yes")
    location = args.bank if "://" in args.bank else Path(args.bank)
    if isinstance(location, Path) and not location.exists():
        parser.error(f"no bank at {location}")
    try:
        with MemoryBank(location) as bank:
            if args.team not in bank.teams():
                parser.error(f"the bank has no team {args.team!r}")
            n = forget_team(bank, args.team)
            print(f"team {args.team!r}: {n} memories and their groups and decisions deleted from {bank.where}")
    except BankError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
