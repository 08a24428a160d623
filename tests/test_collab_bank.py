"""HiCoMER memory bank: atomic groups, append-only log, as-of rebuilds, team isolation, stored vectors.

Every test that takes ``location`` (or ``bank``) runs on both backends: a SQLite file
and a fresh database on the session's PostgreSQL (``pg_url`` in conftest).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memgraft.collab.bank import (
    BankError,
    EmbedderMismatch,
    GroupAlreadyApplied,
    MemoryBank,
    OutOfOrderGroup,
    StaleDecision,
)
from memgraft.collab.bank.schema import DECISION_COLUMNS, LIVE_COLUMNS
from memgraft.collab.types import Action, Decision, MemoryGroup, MemoryQuestion, Relation
from tests.doubles import HashEmbedder

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)



def group(team: str, gid: str, hours: float, *memories: tuple[str, str, str]) -> MemoryGroup:
    return MemoryGroup(team=team, group_id=gid, time=T0 + timedelta(hours=hours), memories=[
        {"memory_id": mid, "type": typ, "author": "alice" if typ == "team" else "bob", "content": text}
        for mid, typ, text in memories])


def decision(bank: MemoryBank, g: MemoryGroup, memory_id: str, after: str | None, *, valid: bool | None = None,
             n: int = 0, level: str = "inter") -> Decision:
    cur = bank.memory(g.team, memory_id)
    return Decision(
        decision_id=f"{g.group_id}-{memory_id}-{n}", team=g.team, memory_id=memory_id, group_id=g.group_id,
        decided_at=g.time, level=level, relation=Relation.contradiction if after else Relation.compatible,
        action=Action.revise if after else Action.keep, before=cur.maintained,
        after=after if after else cur.maintained, valid_before=cur.valid,
        valid_after=cur.valid if valid is None else valid, decided_by="test-rules", reason="test")


def snapshot(bank: MemoryBank, team: str) -> tuple:
    """Everything observable about a team, for before/after equality."""
    with bank.transaction(team) as conn:
        groups = conn.execute("SELECT team, group_id, time FROM groups WHERE team = ? ORDER BY 1, 2", (team,)).fetchall()
        rows = conn.execute(f"SELECT rowid, {LIVE_COLUMNS} FROM memories WHERE team = ? ORDER BY rowid",
                            (team,)).fetchall()
        log = conn.execute(f"SELECT seq, {DECISION_COLUMNS} FROM decisions WHERE team = ? ORDER BY seq",
                           (team,)).fetchall()
    vecs = bank.embeddings(team, [r[1] for r in rows]).round(6).tolist()
    hits = [(m.memory_id, round(s, 6)) for m, s in bank.search(team, "meeting room", 10)]
    return groups, rows, log, vecs, hits, bank.stats(team)


G1 = group("ops", "g1", 0, ("m1", "team", "The weekly meeting is at 9am in room A"),
           ("i1", "individual", "I booked room A for the weekly meeting"))
G2 = group("ops", "g2", 24, ("m2", "team", "From now on the weekly meeting is at 10am in room B"),
           ("i2", "individual", "Ordered new chairs for the lab"))
G3 = group("ops", "g3", 48, ("m3", "team", "Room B is closed; the weekly meeting moves to room C"))


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh(request, tmp_path):
    """A factory of new, empty bank locations on the parametrized backend."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_url")
    made = iter(range(1 << 30))
    return lambda: str(tmp_path / f"bank{next(made)}.sqlite")


@pytest.fixture
def location(fresh):
    return fresh()


@pytest.fixture
def bank(location):
    b = MemoryBank(location, HashEmbedder())
    yield b
    b.close()


def chained_logs(bank, team: str) -> int:
    """Assert every memory's decisions chain (each starts from the text and validity the previous one left: no
    write lost to a concurrent one); how many memories have decisions."""
    logs: dict[str, list] = {}
    for d in bank.decisions(team):
        logs.setdefault(d.memory_id, []).append(d)
    broken = [(a.decision_id, b.decision_id) for log in logs.values() for a, b in zip(log, log[1:])
              if (a.after, a.valid_after) != (b.before, b.valid_before)]
    assert not broken, broken
    return len(logs)


def raw_connection(bank: MemoryBank, team: str | None = None):
    """A plain DB-API connection to the bank's database (autocommit), seeing ``team``'s rows, and its error type."""
    if bank.backend == "sqlite":
        return sqlite3.connect(bank.path, isolation_level=None), sqlite3.DatabaseError
    import psycopg

    conn = psycopg.connect(bank.path, autocommit=True)
    if team is not None:
        conn.execute("SELECT set_config('memgraft.team', %s, false)", (team,))
    return conn, psycopg.Error


def stream(bank: MemoryBank) -> None:
    """G1; G2 revises m1 and outdates i1; G3 revises m1 again."""
    bank.apply_group(G1)
    with bank.group_transaction(G2) as tx:
        tx.add_memories()
        tx.decide("m1", level="inter", relation="contradiction", action="revise", decided_by="test-rules",
                  after="The weekly meeting is at 10am in room B")
        tx.decide("i1", level="inter", relation="contradiction", action="keep", decided_by="test-rules",
                  valid_after=False)
    with bank.group_transaction(G3) as tx:
        tx.add_memories()
        tx.decide("m1", level="inter", relation="contradiction", action="revise", decided_by="test-rules",
                  after="The weekly meeting is at 10am in room C")


def test_boundary_models_read_naive_times_as_utc():
    g = MemoryGroup.model_validate({"team": "t", "group_id": "g", "time": "2024-03-01T09:00:00", "memories": [
        {"memory_id": "m", "type": "team", "author": "a", "content": "x"}], "gold": {"m": "valid"}})
    assert g.time == T0 and g.model_extra == {"gold": {"m": "valid"}}
    q = MemoryQuestion.model_validate({"id": "q", "team": "t", "question": "?", "time": "2024-03-01T11:00:00+02:00"})
    assert q.time == T0 and q.valid is None
    with pytest.raises(ValueError):
        MemoryGroup(team="t", group_id="g", time=T0, memories=[
            {"memory_id": "m", "type": "team", "author": "a", "content": "x"},
            {"memory_id": "m", "type": "individual", "author": "a", "content": "y"}])
    with pytest.raises(ValueError):  # keep must not change the text
        Decision("d", "t", "m", "g", T0, "inter", "compatible", "keep", "a", "b", True, True, "x")


def test_sqlite_wal_and_foreign_keys(tmp_path):
    with MemoryBank(tmp_path / "bank.sqlite") as bank:
        assert bank.journal_mode == "wal" and bank.backend == "sqlite"
        with bank.transaction() as conn:
            assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_new_rows(bank):
    bank.apply_group(G1)
    m1 = bank.memory("ops", "m1")
    assert (m1.original, m1.maintained, m1.type, m1.author, m1.group_id) == (
        "The weekly meeting is at 9am in room A", "The weekly meeting is at 9am in room A", "team", "alice", "g1")
    assert m1.valid and m1.relation is None and m1.action is None and m1.time == m1.maintained_at == T0
    assert bank.is_applied("ops", "g1") and not bank.is_applied("ops", "g2")
    assert bank.stats("ops")["memories"] == 2 and bank.teams() == ["ops"]


def test_crash_inside_a_group_leaves_the_bank_as_before(bank):
    bank.apply_group(G1)
    before = snapshot(bank, "ops")

    class Boom(Exception):
        pass

    with pytest.raises(Boom):  # the caller dies between two decisions
        with bank.group_transaction(G2) as tx:
            tx.add_memories()
            tx.record(decision(bank, G2, "m1", "The weekly meeting is at 10am in room B"))
            assert tx.search("meeting room", 3)  # reads its own writes meanwhile
            raise Boom()
    assert snapshot(bank, "ops") == before and not bank.is_applied("ops", "g2")

    # a stale second decision fails inside record_many, after the first was written
    good = decision(bank, G2, "m1", "The weekly meeting is at 10am in room B")
    stale = replace(decision(bank, G2, "i1", None, valid=False), decision_id="s", valid_before=False)
    with pytest.raises(StaleDecision):
        bank.apply_group(G2, [good, stale])
    assert snapshot(bank, "ops") == before and bank.memory("ops", "m2") is None

    bank.apply_group(G2, [good])  # nothing of the failed tries is left in the way
    assert bank.is_applied("ops", "g2") and bank.memory("ops", "m1").maintained.endswith("room B")
    with pytest.raises(GroupAlreadyApplied):
        bank.apply_group(G2, [])
    with pytest.raises(OutOfOrderGroup):
        bank.apply_group(group("ops", "late", 1, ("x", "team", "late")))
    with pytest.raises(BankError, match="already holds"):
        bank.apply_group(group("ops", "dup", 30, ("m1", "team", "again")))


def test_decision_log_is_append_only_and_originals_never_change(bank):
    stream(bank)
    m1 = bank.memory("ops", "m1")
    assert m1.original == "The weekly meeting is at 9am in room A"
    assert m1.maintained == "The weekly meeting is at 10am in room C" and m1.action is Action.revise
    assert m1.maintained_at == G3.time and m1.time == G1.time
    log = bank.decisions("ops", "m1")
    assert [(d.before, d.after) for d in log] == [
        ("The weekly meeting is at 9am in room A", "The weekly meeting is at 10am in room B"),
        ("The weekly meeting is at 10am in room B", "The weekly meeting is at 10am in room C")]
    assert [d.decided_at for d in log] == [G2.time, G3.time] and log[0].decided_by == "test-rules"
    conn, error = raw_connection(bank, "ops")
    refused = ["UPDATE decisions SET after = 'x'", "DELETE FROM decisions", "UPDATE memories SET original = 'x'",
               "DELETE FROM memories", "DELETE FROM groups"]
    if bank.backend == "postgresql":  # statement-level triggers: even a statement that matches no row
        refused += ["UPDATE decisions SET after = 'x' WHERE seq < 0", "TRUNCATE decisions",
                    "TRUNCATE memories CASCADE", "TRUNCATE groups CASCADE"]
    try:
        for sql in refused:
            with pytest.raises(error, match="append-only|never"):
                conn.execute(sql)
    finally:
        conn.close()
    assert len(bank.decisions("ops")) == 3 and bank.memory("ops", "m1").original == m1.original


def test_as_of_views_follow_the_decisions(bank):
    stream(bank)
    assert bank.memories("ops", as_of=T0 - timedelta(seconds=1)) == []
    at1 = {m.memory_id: m for m in bank.memories("ops", as_of=G1.time + timedelta(hours=1))}
    assert set(at1) == {"m1", "i1"}
    assert at1["m1"].maintained == at1["m1"].original and at1["i1"].valid and at1["m1"].relation is None
    at2 = {m.memory_id: m for m in bank.memories("ops", as_of=G2.time)}
    assert set(at2) == {"m1", "i1", "m2", "i2"}
    assert at2["m1"].maintained.endswith("room B") and at2["m1"].maintained_at == G2.time
    assert not at2["i1"].valid and at2["i1"].relation is Relation.contradiction
    at3 = bank.memories("ops", as_of=G3.time + timedelta(days=1))
    assert at3 == bank.memories("ops")  # the rebuild at "now" is the live state
    assert bank.memories("ops", as_of=datetime.now(timezone.utc)) == bank.memories("ops")
    assert [m.memory_id for m in bank.memories("ops", as_of=G2.time, types=["team"])] == ["m1", "m2"]

    # as-of search scores the text as it stood then, and its validity then
    emb = bank.embedder
    then = bank.search("ops", "meeting 9am room A", 1, as_of=G1.time)
    assert then[0][0].maintained == G1.memories[0].content
    assert np.allclose(then[0][0].embedding, emb.encode([G1.memories[0].content])[0])
    assert bank.search("ops", "meeting 9am room A", 4)[0][0].maintained != G1.memories[0].content
    assert "i1" in {m.memory_id for m, _ in bank.search("ops", "booked room A", 4, as_of=G1.time, valid_only=True)}
    assert "i1" not in {m.memory_id for m, _ in bank.search("ops", "booked room A", 4, as_of=G2.time, valid_only=True)}
    assert "m3" not in {m.memory_id for m, _ in bank.search("ops", "room C closed", 10, as_of=G2.time)}
    live = [(m.memory_id, m.maintained, round(s, 5)) for m, s in bank.search("ops", "weekly meeting", 5)]
    later = [(m.memory_id, m.maintained, round(s, 5)) for m, s in bank.search("ops", "weekly meeting", 5, as_of=G3.time)]
    assert live == later


def as_of_hits(bank: MemoryBank, when: datetime) -> list:
    q = HashEmbedder().encode(["weekly meeting room booked"])[0]  # a vector: the query is not embedded
    return [(m.memory_id, m.maintained, m.valid, round(s, 5)) for m, s in bank.search("ops", q, 5, as_of=when)]


def test_an_as_of_search_reads_the_original_vectors_and_embeds_only_a_twice_revised_text(location):
    with MemoryBank(location, HashEmbedder()) as bank:
        stream(bank)
    emb = HashEmbedder()
    with MemoryBank(location, emb) as bank:  # a new process: nothing cached
        first = as_of_hits(bank, G1.time + timedelta(hours=1))
        # m1 then held its original text (revised twice since), i1 its text of today (outdated since, kept)
        assert {h[0]: h[1] for h in first} == {"m1": G1.memories[0].content, "i1": G1.memories[1].content}
        assert emb.calls == []
        as_of_hits(bank, G2.time)  # m1 then held the text of its first revision: neither stored vector
        assert emb.calls == [["The weekly meeting is at 10am in room B"]]


def test_a_schema_1_bank_is_upgraded_when_opened(location):
    with MemoryBank(location, HashEmbedder()) as bank:
        stream(bank)
        before = [as_of_hits(bank, t) for t in (G1.time, G2.time, G3.time)]
        conn, _ = raw_connection(bank)
    conn.execute("ALTER TABLE memories DROP COLUMN original_embedding")  # as schema 1 made it
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()
    emb = HashEmbedder()
    with MemoryBank(location, emb) as bank:
        conn, _ = raw_connection(bank, "ops")
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "2"
        filled = conn.execute("SELECT memory_id FROM memories WHERE original_embedding IS NOT NULL "
                              "ORDER BY memory_id").fetchall()
        conn.close()
        assert [r[0] for r in filled] == ["i1", "i2", "m2", "m3"]  # m1's stored vector is of a revised text
        assert [as_of_hits(bank, t) for t in (G1.time, G2.time, G3.time)] == before
        assert G1.memories[0].content in {t for call in emb.calls for t in call}  # m1's original: embedded again


def test_rebuild_at_every_group_time_equals_the_live_state_then(location):
    rng = random.Random(7)
    bank = MemoryBank(location, HashEmbedder())
    seen: dict[str, list[datetime]] = {"a": [], "b": []}
    live_then, searched_then = {}, {}
    queries = [f"topic {i}" for i in range(5)] + ["note 3 1"]

    def search(team, q, **kw):  # ids, texts, validity and scores: the as-of search must equal the live one then
        return [(m.memory_id, m.maintained, m.valid, round(s, 5)) for m, s in bank.search(team, q, 6, **kw)]

    for step in range(20):
        team = rng.choice("ab")
        g = group(team, f"{team}{step}", step, *[(f"{team}{step}-{j}", rng.choice(["team", "individual"]),
                                                  f"note {step} {j} on topic {rng.randint(0, 4)}") for j in range(3)])
        with bank.group_transaction(g) as tx:
            tx.add_memories()
            for m, _ in tx.search(f"topic {rng.randint(0, 4)}", 3, earlier_only=True):
                if rng.random() < 0.6:
                    tx.decide(m.memory_id, level="inter", relation="contradiction", action="revise",
                              decided_by="test", after=m.maintained + f" (superseded at {step})",
                              valid_after=rng.random() < 0.5)
                elif rng.random() < 0.5:  # a kept memory: changed since, same text (today's vector holds)
                    tx.decide(m.memory_id, level="inter", relation="compatible", action="keep", decided_by="test")
        seen[team].append(g.time)
        live_then[g.time] = bank.memories(team)
        searched_then[g.time] = [search(team, q) for q in queries]
    for team, times in seen.items():
        for t in times:
            assert bank.memories(team, as_of=t) == live_then[t]
            assert [search(team, q, as_of=t) for q in queries] == searched_then[t]
        assert bank.memories(team, as_of=times[-1]) == bank.memories(team)
    bank.close()


def test_teams_are_kept_apart(bank):
    bank.apply_group(G1)
    bank.apply_group(group("lab", "g1", 0, ("m1", "team", "The weekly meeting is at 9am in room A"),
                           ("x", "individual", "Centrifuge is broken")))
    with bank.group_transaction(group("lab", "g2", 5, ("y", "team", "Use the spare centrifuge"))) as tx:
        tx.decide("m1", level="inter", relation="contradiction", action="revise", decided_by="t",
                  after="Lab meeting cancelled")
    assert bank.teams() == ["lab", "ops"]
    assert bank.memory("ops", "m1").maintained == "The weekly meeting is at 9am in room A"
    assert {m.team for m, _ in bank.search("ops", "weekly meeting centrifuge room", 10)} == {"ops"}
    assert {m.team for m, _ in bank.search("lab", "weekly meeting room A", 10)} == {"lab"}
    assert bank.decisions("ops") == [] and len(bank.decisions("lab")) == 1
    assert bank.stats("ops")["memories"] == 2 and bank.stats("lab")["revised"] == 1


def test_transaction_reads_its_own_writes_and_hides_them_until_commit(bank):
    bank.apply_group(G1)
    other = MemoryBank(bank.path)  # a second connection (as another process would have)
    with bank.group_transaction(G2) as tx:
        new = tx.add_memories()
        assert [m.memory_id for m in new] == ["m2", "i2"]
        assert {m.memory_id for m, _ in tx.search("weekly meeting", 10)} == {"m1", "i1", "m2", "i2"}
        assert {m.memory_id for m, _ in tx.search("weekly meeting", 10, earlier_only=True)} == {"m1", "i1"}
        tx.decide("i1", level="inter", relation="contradiction", action="keep", decided_by="t", valid_after=False)
        assert "i1" not in {m.memory_id for m, _ in tx.search("room A", 10, valid_only=True)}
        assert [m.memory_id for m, _ in tx.search("chairs", 10, types=["individual"])][0] == "i2"
        tx.decide("i2", level="intra", relation="contradiction", action="revise", decided_by="t",
                  after="Ordered new chairs for room B")  # a same-group memory, revised at the group's time
        assert tx.search("chairs room B", 1)[0][0].maintained == "Ordered new chairs for room B"
        assert other.memory("ops", "m2") is None and other.memory("ops", "i1").valid
    assert other.memory("ops", "m2") is not None and not other.memory("ops", "i1").valid
    assert other.memories("ops", as_of=G2.time) == bank.memories("ops")
    with pytest.raises(BankError, match="ended"):  # a kept transaction object cannot write afterwards
        tx.decide("m1", level="inter", relation="neutral", action="keep", decided_by="t")
    assert [d.level for d in bank.decisions("ops")] == ["inter", "intra"]
    with pytest.raises(ValueError, match="memory types"):
        bank.search("ops", "chairs", 3, types=["Team"])
    other.close()


def test_reopen_rebuilds_the_index_from_stored_vectors(location):
    path = location
    first = MemoryBank(path, HashEmbedder())
    stream(first)
    expected = [(m.memory_id, round(s, 6)) for m, s in first.search("ops", "meeting room C", 5)]
    first.close()

    emb = HashEmbedder()
    again = MemoryBank(path, emb)
    assert [(m.memory_id, round(s, 6)) for m, s in again.search("ops", "meeting room C", 5)] == expected
    assert len(emb.calls) == 1  # only the query was embedded: the memories came from their blobs
    again.close()

    bare = MemoryBank(path)  # no embedder: vector queries still work, text queries and writes do not
    q = HashEmbedder().encode(["meeting room C"])[0]
    assert [(m.memory_id, round(s, 6)) for m, s in bare.search("ops", q, 5)] == expected
    with pytest.raises(BankError, match="embedder"):
        bare.search("ops", "meeting", 5)
    with pytest.raises(BankError, match="embedder"):
        bare.apply_group(group("ops", "g9", 99, ("z", "team", "x")))
    bare.close()

    with pytest.raises(EmbedderMismatch, match="hash-64"):
        MemoryBank(path, HashEmbedder(name="other-model"))
    with pytest.raises(EmbedderMismatch):
        MemoryBank(path, HashEmbedder(dim=32))


def test_a_bank_written_without_an_embedder_is_embedded_when_opened_with_one(fresh):
    path = fresh()
    with MemoryBank(path) as plain:
        stream(plain)
        assert plain.dim is None and plain.stats("ops")["revised"] == 1
        with pytest.raises(BankError, match="no embeddings"):
            plain.search("ops", np.ones(64, np.float32) / 8, 3)
    with MemoryBank(fresh(), HashEmbedder()) as direct:
        stream(direct)
        expected = [(m.memory_id, round(s, 6)) for m, s in direct.search("ops", "meeting room C", 5)]
    with MemoryBank(path, HashEmbedder()) as embedded:  # backfilled from the maintained texts
        assert [(m.memory_id, round(s, 6)) for m, s in embedded.search("ops", "meeting room C", 5)] == expected
        assert embedded.stats("ops")["embedder"] == "hash-64"


def test_threads_share_one_bank(bank):
    bank.apply_group(G1)
    errors: list[BaseException] = []

    def reader():
        try:
            for _ in range(30):
                assert bank.search("ops", "weekly meeting", 3)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(5):
        bank.apply_group(group("ops", f"t{i}", 10 + i, (f"t{i}", "individual", f"meeting note {i}")))
    for t in threads:
        t.join()
    assert not errors and bank.stats("ops")["memories"] == 7


def test_real_minilm_bank(tmp_path, embedder):
    bank = MemoryBank(tmp_path / "real.sqlite", embedder)
    stream(bank)
    top, score = bank.search("ops", "Where does the weekly meeting take place?", 1, types=["team"])[0]
    assert top.memory_id in {"m1", "m2", "m3"} and 0 < score <= 1.0001
    assert top.embedding.shape == (embedder.dim,)
    then = bank.search("ops", "Where does the weekly meeting take place?", 2, as_of=G1.time, types=["team"])
    assert [m.maintained for m, _ in then] == [G1.memories[0].content]
    bank.close()
    reopened = MemoryBank(tmp_path / "real.sqlite", embedder)
    assert reopened.search("ops", "chairs for the lab", 1)[0][0].memory_id == "i2"
    reopened.close()


def test_concurrent_writers_of_one_team_take_turns(location):
    """Two connections (as two processes would have) write groups to one team at once: none is refused,
    and no decision is lost (each revision's ``before`` is the previous one's ``after``)."""
    seed = MemoryBank(location, HashEmbedder())
    seed.apply_group(G1)
    errors: list[BaseException] = []

    class Slow(HashEmbedder):  # the transaction stays open a while, so the writers overlap
        def encode(self, texts):
            time.sleep(0.01)
            return super().encode(texts)

    def writer(name: str) -> None:
        bank = MemoryBank(location, Slow())
        try:
            for i in range(6):
                g = group("ops", f"{name}{i}", 1, (f"{name}{i}", "individual", f"note {i} from {name}"))
                with bank.group_transaction(g) as tx:  # read, embed, write: a lost update if not in turn
                    cur = tx.memory("m1")
                    tx.decide("m1", level="inter", relation="contradiction", action="revise", decided_by=name,
                              after=f"{cur.maintained} +{name}{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            bank.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    log = seed.decisions("ops", "m1")
    assert len(log) == 12 and {d.decided_by for d in log} == {"a", "b"}
    assert all(prev.after == d.before for prev, d in zip(log, log[1:]))
    assert seed.memory("ops", "m1").maintained == log[-1].after and seed.stats("ops")["groups"] == 13
    seed.close()



def test_scores_a_rounding_apart_are_tied_and_break_by_write_time_then_id():
    """Two memories with the same text score a last bit apart by where BLAS finds them in the matrix (seen on
    SQLite's whole matrix against PostgreSQL's top-N); such twins still rank by write time, then id."""
    from memgraft.collab.bank.index import TIE_EPS, TeamIndex, rank

    q = np.zeros(4, np.float32)
    q[0] = 1.0
    idx = TeamIndex(dim=4, version=0)
    twin = np.array([0.6, 0.8, 0.0, 0.0], np.float32)
    later_but_higher = twin.copy()
    later_but_higher[0] += TIE_EPS / 4  # a rounding above its twin
    idx.put("b-twin", later_but_higher, True, False, 200)
    idx.put("a-twin", twin, True, False, 100)
    idx.put("far", np.array([0.0, 0.0, 1.0, 0.0], np.float32), True, False, 50)
    clearly_better = np.array([0.7, 0.7, 0.0, 0.0], np.float32)
    idx.put("best", clearly_better / np.linalg.norm(clearly_better), True, False, 300)
    assert [h[0] for h in rank(idx, q, 3, False, None, None, {})] == ["best", "a-twin", "b-twin"]
    assert [h[0] for h in rank(idx, q, 2, False, None, None, {})] == ["best", "a-twin"]  # the twin cut by k: the earlier
