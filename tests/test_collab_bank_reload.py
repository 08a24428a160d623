"""A cached team matrix after another writer's commit: only what changed is read again; and a PostgreSQL search
from the cached matrix is one round trip (as-of: two), its version checked in the statement that reads the hits.

Both backends for the reload (SQLite's banks cache the same matrices); the round trips need the server.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memgraft.collab.bank import MemoryBank
from memgraft.collab.types import Action, Decision, Relation
from tests.collab_bank_helpers import T0, group
from tests.doubles import HashEmbedder

WORDS = "meeting room lab chairs centrifuge budget deadline report assay plate".split()


def _group(team: str, g: int, n: int = 5):
    return group(team, f"g{g:03d}", g, *[(f"{team}{g}-{j}", "team" if j == 0 else "individual",
                                          f"{WORDS[(g + j) % 10]} {WORDS[(3 * g + 2 * j) % 10]} note {g}.{j}")
                                         for j in range(n)])


def _revise(bank: MemoryBank, team: str, g: int, target: str):
    """A group that adds memories and revises ``target`` (invalid, new text, so a new vector)."""
    grp = _group(team, g, 2)
    before = bank.memory(team, target)
    d = Decision(decision_id=f"d-{team}-{g}-{target}", team=team, memory_id=target, group_id=grp.group_id,
                 decided_at=grp.time, level="inter", relation=Relation.contradiction, action=Action.revise,
                 before=before.maintained, after=f"[Outdated] centrifuge budget {g}", valid_before=before.valid,
                 valid_after=False, decided_by="t", reason="test")
    bank.apply_group(grp, [d])


def _hits(bank: MemoryBank, team: str, **kw):
    return [[(m.memory_id, m.maintained, m.valid, round(s, 5)) for m, s in bank.search(team, w, 6, **kw)]
            for w in WORDS[:5]]


def test_a_stale_cached_matrix_reads_only_rows_written_or_decided_on_since(location, monkeypatch):
    """A reader caches a team; another bank (another replica) adds memories and revises an old one. The reader's
    next search brings its matrix up by reading the new rows and the revised one only, never the whole team
    again, and ranks as a freshly opened bank does (live, valid only, as of before the revision). A forget
    (rows gone) is noticed and the team read again whole."""
    from memgraft.collab.bank import stored_index, vectors

    reader, writer = MemoryBank(location, HashEmbedder()), MemoryBank(location, HashEmbedder())
    for g in range(6):
        writer.apply_group(_group("ops", g))
    reader.search("ops", "meeting", 3)
    cached = reader._indexes["ops"]
    _revise(writer, "ops", 6, "ops1-2")
    _revise(writer, "ops", 7, "ops2-3")

    read = []
    real_since = stored_index.SINCE
    real_load = vectors.load_index

    def whole(db, *args):
        if db is reader._db:
            pytest.fail("the reader read the whole team again")
        return real_load(db, *args)

    monkeypatch.setattr(vectors, "load_index", whole)
    original_execute = type(reader._db).execute

    def counting(db, sql, params=()):
        rows = original_execute(db, sql, params)
        if sql.startswith(real_since.split(" WHERE")[0]) and "UNION ALL" in sql:
            rows = list(rows.fetchall() if hasattr(rows, "fetchall") else rows)
            read.extend(r[0] for r in rows)
            return _Rows(rows)
        return rows

    monkeypatch.setattr(type(reader._db), "execute", counting)
    fresh = MemoryBank(location, HashEmbedder())
    for kw in ({}, {"valid_only": True}, {"as_of": T0 + timedelta(hours=6, minutes=30)}):
        assert _hits(reader, "ops", **kw) == _hits(fresh, "ops", **kw), kw
    assert reader._indexes["ops"] is cached and cached.n == 34
    # the four new rows and the two revised ones (each revision's group adds two), nothing else
    assert sorted(set(read)) == sorted(["ops1-2", "ops2-3", "ops6-0", "ops6-1", "ops7-0", "ops7-1"])
    assert not cached.valid[cached.row_of["ops1-2"]]
    monkeypatch.undo()

    from memgraft.collab.bank.forget import forget_team

    forget_team(writer, "ops")
    for g in range(7):  # as many rows as the reader caches, and more: only the count tells a forget
        writer.apply_group(_group("ops", 100 + g))
    fresh2 = MemoryBank(location, HashEmbedder())
    assert _hits(reader, "ops") == _hits(fresh2, "ops")
    assert reader._indexes["ops"].n == 35
    for b in (reader, writer, fresh, fresh2):
        b.close()


class _Rows:
    def __init__(self, rows):
        self._rows = rows

    def fetchall(self):
        return self._rows

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def __iter__(self):
        return iter(self._rows)


def test_a_postgres_search_from_the_cached_matrix_is_one_round_trip(pg_url, monkeypatch):
    """A small team's search sends one round trip to the server (the hits' rows, the team's version read by the
    statement that binds the team), an as-of search one too (the team's version: its rows and decision log are
    held in-process beside the cached matrix, ``team_rows``), whichever hits the matrix guessed; after another
    bank's write the version read with the hits tells the matrix is stale, and the search is ranked again from
    it, brought up, as the held rows are: the same hits as a freshly opened bank."""
    from memgraft.collab.bank import pool

    url = pg_url()
    reader, writer = MemoryBank(url, HashEmbedder()), MemoryBank(url, HashEmbedder())
    for g in range(4):
        writer.apply_group(_group("ops", g))
    _revise(writer, "ops", 4, "ops1-1")
    when = T0 + timedelta(hours=2, minutes=30)
    reader.search("ops", "meeting", 3)
    reader.search("ops", "meeting", 3, as_of=when)

    trips = []  # every statement's round trip borrows a pooled connection here (``pool.plain`` through it too)
    real = pool.with_connection
    monkeypatch.setattr(pool, "with_connection", lambda *a: (trips.append(a[-1]), real(*a))[1])
    for w in WORDS[:4]:
        trips.clear()
        reader.search("ops", w, 5)
        assert len(trips) == 1, trips
        trips.clear()
        reader.search("ops", w, 5, as_of=when)
        assert len(trips) == 1, trips
    expected, guess = _hits(reader, "ops", as_of=when), type(reader)._likely_hits
    monkeypatch.setattr(type(reader), "_likely_hits", lambda *a: guess(*a)[1:])  # the best hit not guessed
    assert _hits(reader, "ops", as_of=when) == expected
    for w in WORDS[:4]:
        trips.clear()
        reader.search("ops", w, 5, as_of=when)
        assert len(trips) == 1, trips  # the version; the hit that was not guessed is a row held too
    monkeypatch.undo()
    # the held rows rebuild the past as the database's log does: read again, and not used at all
    del reader._rows_held["ops"]
    assert _hits(reader, "ops", as_of=when) == expected and "ops" in reader._rows_held
    monkeypatch.setattr(type(reader), "_held_rows", lambda *a: None)
    assert _hits(reader, "ops", as_of=when) == expected
    monkeypatch.undo()

    _revise(writer, "ops", 5, "ops2-2")
    cached = reader._indexes["ops"]
    fresh = MemoryBank(url, HashEmbedder())
    fresh._held_rows = lambda team: None  # the database's log, as the reference
    for kw in ({}, {"valid_only": True}, {"as_of": when}, {"as_of": T0 + timedelta(hours=5, minutes=30)}):
        assert _hits(reader, "ops", **kw) == _hits(fresh, "ops", **kw), kw
    assert reader._indexes["ops"] is cached and cached.version == fresh._indexes["ops"].version
    # the reader's own group and revision: its held rows are brought up, not read again whole
    held = reader._rows_held["ops"]
    reader.apply_group(_group("ops", 6))
    _revise(reader, "ops", 7, "ops6-1")
    fresh.close()
    fresh = MemoryBank(url, HashEmbedder())
    fresh._held_rows = lambda team: None
    for kw in ({"as_of": T0 + timedelta(hours=6, minutes=30)}, {"as_of": T0 + timedelta(hours=7, minutes=30)}):
        assert _hits(reader, "ops", **kw) == _hits(fresh, "ops", **kw), kw
    assert reader._rows_held["ops"] is held and held.version == reader._indexes["ops"].version
    for b in (reader, writer, fresh):
        b.close()


def round_trips(monkeypatch) -> list[str]:
    """Every round trip psycopg makes from here on: a statement outside a pipeline, a pipeline (however many
    statements it sends), an executemany outside one."""
    import psycopg

    trips: list[str] = []
    execute, pipeline, many = psycopg.Connection.execute, psycopg.Connection.pipeline, psycopg.Cursor.executemany

    def counted_execute(conn, query, *a, **k):
        if conn._pipeline is None:
            trips.append(str(query)[:40])
        return execute(conn, query, *a, **k)

    def counted_pipeline(conn):
        if conn._pipeline is None:
            trips.append("pipeline")
        return pipeline(conn)

    def counted_many(cur, query, *a, **k):
        if cur.connection._pipeline is None:
            trips.append("executemany " + str(query)[:30])
        return many(cur, query, *a, **k)

    monkeypatch.setattr(psycopg.Connection, "execute", counted_execute)
    monkeypatch.setattr(psycopg.Connection, "pipeline", counted_pipeline)
    monkeypatch.setattr(psycopg.Cursor, "executemany", counted_many)
    return trips


def test_a_postgres_group_write_takes_few_round_trips(pg_url, monkeypatch):
    """``apply_group`` of two memories and one revision on a team the bank caches: one round trip, the statement that
    calls ``memgraft_apply_group`` in autocommit (``pg_apply``: it binds the team, takes the team's lock, checks and
    writes the group: one statement, one transaction); 17, 12, then 7 before."""
    with MemoryBank(pg_url(), HashEmbedder()) as bank:
        for g in range(3):
            bank.apply_group(_group("ops", g))
        bank.search("ops", "meeting", 3)
        grp = _group("ops", 3, 2)
        before = bank.memory("ops", "ops1-1")
        d = Decision(decision_id="d-ops-3", team="ops", memory_id="ops1-1", group_id=grp.group_id, decided_at=grp.time,
                     level="inter", relation=Relation.contradiction, action=Action.revise, before=before.maintained,
                     after="[Outdated] centrifuge budget", valid_before=True, valid_after=False, decided_by="t",
                     reason="test")
        trips = round_trips(monkeypatch)
        bank.apply_group(grp, [d])
        monkeypatch.undo()
        assert len(trips) == 1, trips
        assert not bank.memory("ops", "ops1-1").valid and bank.memory("ops", "ops3-1") is not None
