"""A PostgreSQL group written by one statement: ``pg_schema.APPLY_GROUP``'s function (schema 4), in autocommit.

Why: a group written statement by statement took 7 round trips (BEGIN, the team's lock, the checks and writes,
COMMIT) and ~17 statements through psycopg's Python: 2.1-2.2 ms against SQLite's 0.5-0.6 on this machine
(bench/collab_scale.py's ingest), most of it the client's work per statement and per trip. The function binds
the team, takes its writers' lock, makes the same checks in the same order (applied, time order, id clash, each
decision against its target's state as the group's earlier decisions left it) and the same writes, raising a
code of its own for each refusal, which ``apply_group`` turns into the exception the statement-by-statement path
raises. One statement is one transaction: one round trip, nothing held between trips.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from memgraft.collab.bank import errors, pool
from memgraft.collab.bank.pg_schema import APPLIED, CLASH, MISSING, OUT_OF_ORDER, STALE
from memgraft.collab.bank.schema import iso

# The vectors in binary (%b): as text, pgvector writes each float with str(), 0.2 ms a 384-dim vector.
CALL = ("SELECT * FROM memgraft_apply_group(%s, %s, %s, %s, %s::text[], %s::text[], %s::text[], %s::text[], "
        "%b::vector[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
        "%s::int[], %s::int[], %s::text[], %s::text[], %b::vector[])")


def call_args(group: Any, decisions: Sequence[Any], vecs: Any, revised: Sequence[Any], applied_at: str,
              encode: Any) -> tuple:
    """The function's arguments: the group, its memories' columns and vectors, its decisions' columns and each
    one's new vector (None: the text is unchanged, the vector kept)."""
    g, ms, ds = group, group.memories, decisions
    return (g.team, g.group_id, iso(g.time), applied_at,
            [m.memory_id for m in ms], [m.type for m in ms], [m.author for m in ms], [m.content for m in ms],
            None if vecs is None else [encode(v) for v in vecs],
            [d.decision_id for d in ds], [d.memory_id for d in ds], [d.level for d in ds],
            [str(d.relation) for d in ds], [str(d.action) for d in ds], [d.before for d in ds],
            [d.after for d in ds], [int(d.valid_before) for d in ds], [int(d.valid_after) for d in ds],
            [d.decided_by for d in ds], [d.reason for d in ds], [None if v is None else encode(v) for v in revised])


def apply_group(db: Any, args: Sequence[Any], refusals: "Refusals") -> tuple[int, int, list[str], list[str]]:
    """Call the function on a connection of ``db``'s pool (``pool.write_once``: never sent twice); (the team's new
    version, its memory count, each decision's target type and time). A refusal is raised as ``refusals`` names it;
    a lost server or a timeout as the bank's errors."""
    import psycopg

    try:
        return pool.write_once(db._shared, db.where, lambda conn: conn.execute(CALL, args).fetchone())
    except psycopg.Error as err:
        code = getattr(err.diag, "sqlstate", None)
        if code in refusals.codes:
            raise refusals.error_for(code, err.diag.message_primary or "") from None
        pool.reraise(err, db.where)
        raise  # pragma: no cover - reraise always raises


class Refusals:
    """The exceptions a group's write raises, built from the function's refusal and the group's own fields."""

    codes = (APPLIED, OUT_OF_ORDER, CLASH, STALE, MISSING)

    def __init__(self, group: Any, decisions: Sequence[Any]):
        self.group, self.decisions = group, decisions

    def error_for(self, code: str, message: str) -> errors.BankError:
        g = self.group
        if code == APPLIED:
            return errors.already_applied(g.team, g.group_id)
        if code == OUT_OF_ORDER:
            return errors.out_of_order(g.team, g.group_id, iso(g.time), message)
        if code == CLASH:
            return errors.clash(g.team, json.loads(message))
        d = self.decisions[int(message) - 1]  # the refused decision's place in the group, from 1
        if code == STALE:
            return errors.stale(d.decision_id, d.memory_id)
        return errors.missing_target(d.decision_id, g.team, d.memory_id)
