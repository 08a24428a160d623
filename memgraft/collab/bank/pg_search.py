"""A PostgreSQL team's nearest rows, read in the server: exactly, or through the team's own HNSW index.

Why apart from ``postgres``: the backend is about connections, transactions and setup; this is the one
query plan (the index scan, its short-read fallback, the tie read) that a large team's search takes.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from memgraft.collab.bank.index import TeamIndex
from memgraft.collab.bank.pg_schema import team_literal, to_psycopg
from memgraft.collab.bank.stored_index import index_of_rows

TOP_N_SLACK = 16  # rows fetched past k, so near-ties at the k-th score resolve as in SQLite (write order)
TIE_EPS = 1e-5  # distances this close count as tied (the database and numpy round float32 sums differently)


def top_n(bank: Any, team: str, q: np.ndarray, k: int, dim: int, valid_only: bool,
          want_team: bool | None, until: str | None, exclude: Sequence[str]) -> TeamIndex:
    """The team's rows nearest ``q`` by cosine, as a small index in write order (``rank`` scores it); ``bank`` is
    the ``PostgresBackend`` asking (not imported here: it imports this).

    A small team is read exactly; a large one through the HNSW index, re-read
    exactly if the scan comes back short (it returns at most ``hnsw.ef_search``
    rows before the team's filter). When the slack past ``k`` is all ties with the
    k-th row, every row tied with it is read, so ties break by write order as in SQLite.
    """
    n = k + TOP_N_SLACK
    where, args = ["team = ?", "embedding IS NOT NULL"], [team]
    for cond, arg, used in (("valid = 1", None, valid_only),
                            ("type = ?", "team" if want_team else "individual", want_team is not None),
                            ("time <= ?", until, until is not None),
                            ("NOT (memory_id = ANY(?))", list(exclude), bool(exclude))):
        if used:
            where.append(cond)
            args += [] if arg is None else [arg]
    bank.use_team(team)
    bank.set_ef_search(min(1000, max(bank.ef_search_setting, n)))
    qv, cond = bank.encode_vec(q), " AND ".join(where)

    def read(tail: str, *extra: Any, own_index: bool = False) -> list[tuple]:
        sql = to_psycopg(f"SELECT rowid, memory_id, embedding, valid, type, time, embedding <=> ? AS dist "
                         f"FROM memories WHERE {cond} {tail}")
        if not own_index:
            return bank.execute_untied(sql, (qv, *args, *extra)).fetchall()
        # the team as a literal, so the planner can match the team's partial index (not a parameter)
        sql = sql.replace("team = %s", f"team = {team_literal(team).replace('%', '%%')}", 1)
        return bank.execute_untied(sql, (qv, *args[1:], *extra)).fetchall()

    exact = "ORDER BY (embedding <=> ?) + 0 LIMIT ?"  # "+ 0": an order the index cannot give, so a scan
    large = bank.ranks_team_in_db(team)  # past EXACT_MAX_ROWS: the team has its own index
    rows = read("ORDER BY embedding <=> ? LIMIT ?", qv, n, own_index=True) if large else read(exact, qv, n)
    if len(rows) < n and large:
        rows = read(exact, qv, n)
    if k > 0 and len(rows) == n and rows[-1][6] - rows[k - 1][6] <= TIE_EPS:
        rows = read("AND (embedding <=> ?) <= ?", qv, rows[k - 1][6] + TIE_EPS)
    # in write order: rank breaks ties by position, as over SQLite's whole matrix
    return index_of_rows(bank, team, [r[1:6] for r in sorted(rows, key=lambda r: r[0])], dim, 0)
