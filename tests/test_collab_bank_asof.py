"""HiCoMER memory bank: as-of rebuilds and searches, and the stored vectors and index behind them.

Every test that takes ``location`` (or ``bank``) runs on both backends: a SQLite file
and a fresh database on the session's PostgreSQL (``fresh`` and ``pg_url`` in conftest).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memgraft.collab.bank import SCHEMA_VERSION, BankError, EmbedderMismatch, MemoryBank
from memgraft.collab.bank.schema import iso
from memgraft.collab.data import revised_text
from memgraft.collab.types import Relation
from tests.collab_bank_helpers import G1, G2, G3, T0, group, raw_connection, stream
from tests.doubles import HashEmbedder


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


def test_a_revision_that_only_labels_the_text_outdated_keeps_its_vector(location):
    """The label is validity, not content: the write embeds only the group's new memories, the live search scores the
    labelled memory as it scored it before, and an as-of search from before the label scores it the same, with
    nothing embedded (the judge labels most revisions so: a write of 64 long notes embedded ~70 of them again)."""
    emb = HashEmbedder()
    q = HashEmbedder().encode(["weekly meeting room booked"])[0]
    with MemoryBank(location, emb) as bank:
        bank.apply_group(G1)
        scored = {m.memory_id: round(s, 5) for m, s in bank.search("ops", q, 5)}
        calls = len(emb.calls)
        with bank.group_transaction(G2) as tx:
            tx.add_memories()
            tx.decide("m1", level="inter", relation="contradiction", action="revise", decided_by="test-rules",
                      after=revised_text(G1.memories[0].content, G2.time.isoformat(), "m2"), valid_after=False)
        assert emb.calls[calls:] == [[m.content for m in G2.memories]]
        now = {m.memory_id: (m.maintained, m.valid, round(s, 5)) for m, s in bank.search("ops", q, 5)}
        assert now["m1"][0].startswith("[Outdated since") and not now["m1"][1] and now["m1"][2] == scored["m1"]
    emb = HashEmbedder()
    with MemoryBank(location, emb) as bank:  # a new process: nothing cached
        then = {m.memory_id: (m.maintained, round(s, 5)) for m, s in bank.search("ops", q, 5, as_of=G1.time)}
        assert then["m1"] == (G1.memories[0].content, scored["m1"]) and emb.calls == []
        # nor is the original's vector read for it: today's vector is the original's
        assert [vec for m, _, vec in bank.as_of_reads("ops", G1.time, [])[0] if m.memory_id == "m1"] == [None]
        log = bank._team_db("ops").execute(bank._db.changed_since_sql.format(time="m.time"),
                                           {"team": "ops", "as_of": iso(G1.time)}).fetchall()
        assert [r[14] for r in log if r[0] == "m1"] == [None]  # not sent by the database either


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
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == SCHEMA_VERSION
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
