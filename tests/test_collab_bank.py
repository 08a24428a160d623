"""HiCoMER memory bank: atomic groups, append-only log, team isolation, transactions and concurrent writers.

Every test that takes ``location`` (or ``bank``) runs on both backends: a SQLite file
and a fresh database on the session's PostgreSQL (``fresh`` and ``pg_url`` in conftest).
As-of rebuilds and stored vectors are in ``test_collab_bank_asof.py``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from memgraft.collab.bank import (
    BankError,
    GroupAlreadyApplied,
    MemoryBank,
    OutOfOrderGroup,
    StaleDecision,
)
from memgraft.collab.bank.schema import DECISION_COLUMNS, LIVE_COLUMNS
from memgraft.collab.types import Action, Decision, MemoryGroup, MemoryQuestion, Relation
from tests.collab_bank_helpers import G1, G2, G3, T0, group, raw_connection, stream
from tests.doubles import HashEmbedder


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


def test_a_group_s_decisions_apply_in_order_and_a_bad_one_writes_nothing(location):
    """Decisions chained on one target, one on the group's own new memory, in the log's order; a decision on a memory
    the team lacks refuses the whole group. PostgreSQL checks and writes the group in one statement
    (``pg_apply``): its rows, log, vectors and cached matrix equal what the statement-by-statement path leaves."""
    bank = MemoryBank(location, HashEmbedder())
    bank.apply_group(G1)
    bank.search("ops", "meeting", 3)  # the team's matrix cached: the group is folded into it after the commit
    first = decision(bank, G2, "m1", "The weekly meeting was at 9am (moved)")
    second = replace(first, decision_id="g2-m1-1", before=first.after, after="The weekly meeting was at 9am (gone)",
                     valid_after=False)
    own = Decision(decision_id="g2-m2-0", team="ops", memory_id="m2", group_id="g2", decided_at=G2.time,
                   level="intra", relation=Relation.compatible, action=Action.revise,
                   before=G2.memories[0].content, after=G2.memories[0].content + " (confirmed)", valid_before=True,
                   valid_after=True, decided_by="test-rules", reason="test")
    bank.apply_group(G2, [first, second, own])
    assert bank.memory("ops", "m1").maintained.endswith("(gone)") and not bank.memory("ops", "m1").valid
    assert bank.memory("ops", "m2").maintained.endswith("(confirmed)")
    assert [d.decision_id for d in bank.decisions("ops")] == ["g2-m1-0", "g2-m1-1", "g2-m2-0"]
    before = snapshot(bank, "ops")
    with MemoryBank(location, HashEmbedder()) as reopened:  # its matrix read from the rows
        assert snapshot(reopened, "ops") == before
    missing = replace(first, decision_id="g3-x", memory_id="nope", group_id="g3", decided_at=G3.time)
    with pytest.raises(BankError, match="team 'ops' has no memory 'nope'"):
        bank.apply_group(G3, [missing])
    assert snapshot(bank, "ops") == before and not bank.is_applied("ops", "g3")
    bank.close()


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
