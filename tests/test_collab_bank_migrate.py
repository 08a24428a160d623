"""Every released PostgreSQL schema opens, upgrades and searches as a bank made today (``bank.migrate``).

The schemas are the DDL each released commit made (tests/fixtures/pg_schemas/), filled with rows as that
code wrote them; the first PostgreSQL schema (79e08a1) also as the previous code left it after upgrading it
to schema 2 without ``teams.memories`` (opened, but every search failed on the missing column).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from memgraft.collab.bank import SCHEMA_VERSION, BankError, MemoryBank, SchemaTooNew
from memgraft.collab.bank.forget import forget_team, main as forget_main
from memgraft.collab.bank.schema import iso
from memgraft.collab.types import Decision
from tests.collab_bank_helpers import G1, G2, G3, group, raw_connection
from tests.doubles import HashEmbedder

SCHEMAS = Path(__file__).parent / "fixtures" / "pg_schemas"
LAB = group("lab", "l1", 2, ("x1", "team", "The centrifuge is in room 4"))


def _decision(g, memory_id: str, before: str, after: str) -> Decision:
    return Decision(decision_id=f"d-{g.group_id}-{memory_id}", team=g.team, memory_id=memory_id, group_id=g.group_id,
                    decided_at=g.time, level="inter", relation="contradiction", action="revise", before=before,
                    after=after, valid_before=True, valid_after=False, decided_by="rules", reason="moved")


D2 = _decision(G2, "m1", G1.memories[0].content, "The weekly meeting was at 9am in room A (moved)")
D3 = _decision(G3, "m2", G2.memories[0].content, "The weekly meeting is at 10am, no longer in room B")
STREAM = [(G1, []), (LAB, []), (G2, [D2]), (G3, [D3])]


def _old_bank(url: str, commit: str, upgraded_by_old_code: bool = False) -> None:
    """The bank as ``commit``'s code made and wrote it: its DDL, then its rows written directly."""
    import psycopg
    from pgvector.psycopg import register_vector

    emb = HashEmbedder()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((SCHEMAS / f"{commit}.sql").read_text())
        register_vector(conn)
        has_original = commit in ("9223302", "93f4f6b")
        for g, decisions in STREAM:
            conn.execute("SELECT set_config('memgraft.team', %s, false)", (g.team,))
            conn.execute("INSERT INTO teams (team, version) VALUES (%s, 0) ON CONFLICT DO NOTHING", (g.team,))
            conn.execute("INSERT INTO groups VALUES (%s, %s, %s, %s)", (g.team, g.group_id, iso(g.time), iso(g.time)))
            for m in g.memories:
                vec = emb.encode([m.content])[0]
                conn.execute("INSERT INTO memories (team, memory_id, group_id, type, author, original, maintained, "
                             "time, valid, maintained_at, embedding) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,1,%s,%s)",
                             (g.team, m.memory_id, g.group_id, m.type, m.author, m.content, m.content, iso(g.time),
                              iso(g.time), vec))
                if has_original:
                    conn.execute("UPDATE memories SET original_embedding = embedding WHERE memory_id = %s",
                                 (m.memory_id,))
            for d in decisions:
                conn.execute("UPDATE memories SET maintained = %s, relation = %s, action = %s, valid = %s, "
                             "maintained_at = %s, embedding = %s WHERE team = %s AND memory_id = %s",
                             (d.after, str(d.relation), str(d.action), int(d.valid_after), iso(d.decided_at),
                              emb.encode([d.after])[0], d.team, d.memory_id))
                conn.execute("INSERT INTO decisions (decision_id, team, memory_id, group_id, decided_at, level, "
                             "relation, action, before, after, valid_before, valid_after, decided_by, reason) "
                             "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                             (d.decision_id, d.team, d.memory_id, d.group_id, iso(d.decided_at), d.level,
                              str(d.relation), str(d.action), d.before, d.after, 1, 0, d.decided_by, d.reason))
            conn.execute("UPDATE teams SET version = version + 1 WHERE team = %s", (g.team,))
        if upgraded_by_old_code:  # what MemoryBank._upgrade_from_1 did to it before schema 3
            conn.execute("ALTER TABLE memories ADD COLUMN original_embedding vector(64)")
            for team in ("ops", "lab"):
                conn.execute("SELECT set_config('memgraft.team', %s, false)", (team,))
                conn.execute("UPDATE memories SET original_embedding = embedding WHERE maintained = original")
            conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")


def _hits(bank: MemoryBank) -> list:
    out = []
    for kw in ({}, {"valid_only": True}, {"as_of": G2.time}, {"as_of": G1.time + timedelta(hours=1)}):
        for team, q in (("ops", "weekly meeting room"), ("lab", "centrifuge")):
            out.append([(m.memory_id, m.maintained, m.valid, round(s, 5)) for m, s in bank.search(team, q, 5, **kw)])
    return out


@pytest.mark.parametrize("commit,upgraded", [("79e08a1", False), ("79e08a1", True), ("346824a", False),
                                             ("9223302", False), ("93f4f6b", False)])
def test_each_released_postgres_schema_opens_upgrades_and_searches(pg_url, commit, upgraded):
    today = pg_url()
    with MemoryBank(today, HashEmbedder()) as fresh:
        for g, decisions in STREAM:
            fresh.apply_group(g, decisions)
        expected = _hits(fresh)
    url = pg_url()
    _old_bank(url, commit, upgraded)
    with MemoryBank(url, HashEmbedder()) as bank:
        conn, _ = raw_connection(bank, "ops")
        with conn:
            assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == SCHEMA_VERSION
            assert conn.execute("SELECT team, memories FROM teams ORDER BY team").fetchall() == [("lab", 1), ("ops", 5)]
            assert conn.execute("SELECT to_regclass('memories_hnsw')").fetchone()[0] is None  # small teams: none
        assert _hits(bank) == expected
        bank.apply_group(group("ops", "g4", 72, ("m4", "team", "The weekly meeting is cancelled")))
        assert bank.search("ops", "weekly meeting cancelled", 1)[0][0].memory_id == "m4"
        assert bank.stats("ops")["memories"] == 6
    with MemoryBank(url) as again:  # opened again: already at this version, nothing to do
        assert again.stats("lab")["memories"] == 1


def test_an_unknown_or_newer_schema_is_refused_in_words(pg_url):
    url = pg_url()
    with MemoryBank(url, HashEmbedder()) as bank:
        conn, _ = raw_connection(bank)
    with conn:
        conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    with pytest.raises(SchemaTooNew,
                       match=f"schema 9 was written by newer code; this code reads schemas 1 to {SCHEMA_VERSION}"):
        MemoryBank(url, HashEmbedder())
    with raw_connection_url(url) as conn:
        conn.execute("UPDATE meta SET value = 'x' WHERE key = 'schema_version'")
    with pytest.raises(BankError, match=f"bank schema x, this code reads schemas 1 to {SCHEMA_VERSION}"):
        MemoryBank(url, HashEmbedder())


def raw_connection_url(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_team_is_deleted_on_request_and_only_then(tmp_path, pg_url, backend, capsys):
    """``forget_team`` (and ``python -m memgraft.collab.bank.forget``) deletes one team's groups, memories and
    decisions; the other team is untouched, and a plain DELETE is still refused (and TRUNCATE on PostgreSQL)."""
    location = pg_url() if backend == "postgresql" else str(tmp_path / "bank.sqlite")
    with MemoryBank(location, HashEmbedder()) as bank:
        for g, decisions in STREAM:
            bank.apply_group(g, decisions)
        assert bank.search("ops", "weekly meeting", 3)
        with pytest.raises(Exception, match="never"):
            with bank.transaction("ops") as db:
                db.execute("DELETE FROM memories WHERE team = ?", ("ops",))
        assert forget_team(bank, "ops") == 5
        assert bank.memories("ops") == [] and bank.decisions("ops") == [] and bank.search("ops", "weekly", 3) == []
        assert [m.memory_id for m in bank.memories("lab")] == ["x1"]
        with pytest.raises(Exception, match="never"):  # the refusal is back after that transaction
            with bank.transaction("lab") as db:
                db.execute("DELETE FROM memories WHERE team = ?", ("lab",))
        if backend == "postgresql":
            with pytest.raises(Exception, match="never"):
                with bank.transaction("lab") as db:
                    db.execute("SELECT set_config('memgraft.forget', 'on', true)")
                    db.execute("TRUNCATE memories CASCADE")
        bank.apply_group(G1)  # the team may start again
        assert [m.memory_id for m in bank.memories("ops")] == ["m1", "i1"]
    assert forget_main([location, "lab", "--yes"]) == 0
    assert "team 'lab': 1 memories" in capsys.readouterr().out and "://memgraft:" not in location
    with MemoryBank(location) as bank:
        assert bank.memories("lab") == [] and len(bank.memories("ops")) == 2
