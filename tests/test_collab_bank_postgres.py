"""The PostgreSQL bank's own guarantees: the same hits as SQLite, teams apart row by row, the HNSW path.

The shared guarantees run on both backends in ``test_collab_bank.py`` and ``test_collab_bank_asof.py``;
these need the server.
"""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import psycopg
import pytest

from memgraft.collab.bank import BankError, MemoryBank
from tests.doubles import HashEmbedder
from tests.collab_bank_helpers import G1, group, raw_connection


def test_both_backends_rank_alike(tmp_path, pg_url):
    """The same stream into SQLite and PostgreSQL: the same hits with the same scores, live and as of any time
    (ties included: some texts repeat, and ties break by write order on both)."""
    rng = random.Random(3)
    banks = [MemoryBank(tmp_path / "s.sqlite", HashEmbedder()), MemoryBank(pg_url(), HashEmbedder())]
    words = "meeting room lab chairs centrifuge budget deadline report".split()
    times = []
    for step in range(25):
        team = rng.choice(["ops", "lab"])
        g = group(team, f"g{step}", step, *[(f"{team}{step}-{j}", rng.choice(["team", "individual"]),
                                             " ".join(rng.sample(words, 2))) for j in range(4)])
        picks = [(rng.random(), rng.random() < 0.5) for _ in range(3)]
        for bank in banks:
            with bank.group_transaction(g) as tx:
                tx.add_memories()
                hits = tx.search(words[step % len(words)], 3, earlier_only=True)
                for (m, _), (p, valid) in zip(hits, picks):
                    if p < 0.7:
                        tx.decide(m.memory_id, level="inter", relation="contradiction", action="revise",
                                  decided_by="t", after=f"{m.maintained} {words[step % 5]}", valid_after=valid)
        times.append(g.time)

    def hits(bank, **kw):
        return [[(m.memory_id, m.maintained, m.valid, round(s, 5)) for m, s in bank.search(team, w, 6, **kw)]
                for team in ("ops", "lab") for w in words[:4]]

    for kw in ({}, {"valid_only": True}, {"types": ["team"]}, {"as_of": times[8]},
               {"as_of": times[17], "valid_only": True}, {"as_of": times[12], "types": ["individual"]}):
        assert hits(banks[0], **kw) == hits(banks[1], **kw), kw
    for bank in banks:
        bank.close()


def test_postgres_keeps_teams_apart_row_by_row(pg_url):
    """Row-level security: a session sees and writes only the rows of its ``memgraft.team``; a bank bound to a
    team refuses the others; a role that bypasses the policies is refused; a bank of small teams has no HNSW index."""
    import psycopg

    from memgraft.collab.bank import open_bank

    url = pg_url()
    with open_bank(url, HashEmbedder()) as bank:
        bank.apply_group(G1)
        bank.apply_group(group("lab", "g1", 0, ("x", "individual", "Centrifuge is broken")))
        with bank.transaction("ops") as db:  # SQLite's placeholders and a literal "%", with and without parameters
            assert db.execute("SELECT '5%'").fetchone()[0] == "5%"
            assert db.execute("SELECT COUNT(*), '5%' FROM memories WHERE maintained LIKE '%room A' AND type = ?",
                              ("team",)).fetchone() == (1, "5%")
        assert [m.memory_id for m, _ in bank.search("lab", "centrifuge", 2)] == ["x"]  # bound in the read's pipeline
        with bank._db._shared.pool.connection() as pooled:  # bound per transaction: no team left on a connection
            assert pooled.execute("SELECT current_setting('memgraft.team', true)").fetchone()[0] in (None, "")
        conn, _ = raw_connection(bank)
    with conn:
        for table in ("groups", "memories", "decisions"):  # no team set: nothing at all
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0
        conn.execute("SELECT set_config('memgraft.team', 'ops', false)")
        assert conn.execute("SELECT DISTINCT team FROM memories").fetchall() == [("ops",)]
        assert conn.execute("UPDATE memories SET maintained = 'x' WHERE team = 'lab'").rowcount == 0
        with pytest.raises(psycopg.Error, match="row-level security"):
            conn.execute("INSERT INTO groups VALUES ('lab', 'g9', '2024', '2024')")
        assert conn.execute("SELECT to_regclass('memories_hnsw')").fetchone()[0] is None  # small teams: no index
    with open_bank(url, HashEmbedder(), team="lab") as lab:
        assert lab.teams() == ["lab"] and [m.memory_id for m in lab.memories("lab")] == ["x"]
        with pytest.raises(BankError, match="team 'lab' only"):
            lab.memories("ops")
        with pytest.raises(BankError, match="team 'lab' only"):
            lab.apply_group(group("ops", "g2", 5, ("y", "team", "no")))
    with pytest.raises(BankError, match="bypasses row-level security"):
        MemoryBank(url.replace("://memgraft@", "://postgres@"))  # the server's superuser
    with pytest.raises(BankError, match="cannot reach the PostgreSQL bank at postgresql://memgraft:\\*\\*\\*@"):
        MemoryBank("postgresql://memgraft:secret@/bank?host=/nonexistent")
    with pytest.raises(BankError, match="neither a path"):
        MemoryBank("mysql://host/bank")


def hnsw_plan(bank) -> str:
    """The plan a large team's top-N gets (sorting off, so the order comes from the HNSW index if there is one)."""
    conn, _ = raw_connection(bank, "big")
    with conn:
        conn.execute("SET enable_sort = off")
        return "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT memory_id FROM memories WHERE team = 'big' ORDER BY embedding <=> %s::vector LIMIT 5",
            (str([0.125] * 64),)))


def test_postgres_searches_a_large_team_through_the_hnsw_index(pg_url, monkeypatch):
    """The HNSW index is built when a team passes ``EXACT_MAX_ROWS`` (here 25), not before; past it a team's
    top-N comes from the HNSW scan, and a scan that the team filter leaves short (a small team among many rows,
    threshold 0) is read again exactly."""
    from memgraft.collab.bank import postgres

    monkeypatch.setattr(postgres, "EXACT_MAX_ROWS", 25)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    with MemoryBank(pg_url(), HashEmbedder()) as bank:
        for g in range(6):
            if g == 2:  # 20 rows: still exact, and no index kept up meanwhile
                assert "memories_hnsw" not in hnsw_plan(bank)
            bank.apply_group(group("big", f"b{g}", g, *[(f"big{g}-{j}", "individual", f"{words[(g + j) % 12]} "
                                                         f"{words[(3 * g + j) % 12]} note {g} {j}") for j in range(10)]))
        assert postgres.team_index("big") in hnsw_plan(bank)  # the team's own index
        monkeypatch.setattr(postgres, "EXACT_MAX_ROWS", 0)
        bank.apply_group(group("small", "s0", 0, *[(f"s{j}", "team", f"small team fact {j}") for j in range(3)]))
        shown = bank.search("small", "small team fact", 10)
        assert sorted(m.memory_id for m, _ in shown) == ["s0", "s1", "s2"]
        target = bank.memory("big", "big3-7")
        top, score = bank.search("big", target.maintained, 1)[0]
        assert top.memory_id == "big3-7" and score == pytest.approx(1.0, abs=1e-5)
        assert [m.memory_id for m, _ in bank.search("big", target.maintained, 5, as_of=G1.time + timedelta(hours=1))
                ] and all(m.time <= G1.time + timedelta(hours=1)
                          for m, _ in bank.search("big", target.maintained, 5, as_of=G1.time + timedelta(hours=1)))



def test_a_large_teams_scan_keeps_the_setting_s_candidates(pg_url, monkeypatch):
    """``bank.hnsw_ef_search`` is what the HNSW scan of a large team runs at, read at each search: the bench's
    sweep over it once changed a constant that the search had copied, and measured 400 at every level."""
    from memgraft.collab.bank import pool, postgres

    monkeypatch.setattr(postgres, "EXACT_MAX_ROWS", 5)
    kept = pool.current()
    with MemoryBank(pg_url(), HashEmbedder()) as bank:
        bank.apply_group(group("big", "b0", 0, *[(f"m{j}", "individual", f"note number {j}") for j in range(12)]))
        try:
            for ef in (120, 40):
                pool.configure(kept.model_copy(update={"hnsw_ef_search": ef}))
                assert bank.search("big", "note number 3", 3)[0][0].memory_id == "m3"
                db = bank._team_db("big")
                assert db.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == str(ef)
        finally:
            pool.configure(kept)


def at_once(*calls):
    """Each call in its own thread, all released together; their results in order, or the first error raised
    here (a thread's exception would only be printed)."""
    start, results, errors = threading.Barrier(len(calls)), [None] * len(calls), []

    def run(i, call):
        try:
            start.wait()
            results[i] = call()
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors
    return results


def test_two_writers_crossing_the_threshold_at_once_build_one_index(pg_url, monkeypatch):
    """Two processes' teams pass ``EXACT_MAX_ROWS`` in the same instant: both groups commit, and each team gets
    one index of its own (a partial index on its rows), a small team none."""
    from memgraft.collab.bank import postgres

    monkeypatch.setattr(postgres, "EXACT_MAX_ROWS", 5)
    url = pg_url()
    banks = [MemoryBank(url, HashEmbedder()) for _ in range(2)]
    at_once(*(lambda b=b, t=t: b.apply_group(group(t, "g0", 0, *[(f"{t}{j}", "team", f"{t} fact {j}")
                                                                  for j in range(8)]))
              for b, t in zip(banks, ("ops", "lab"))))
    banks[0].apply_group(group("hr", "g0", 0, ("hr0", "team", "hr fact")))
    conn, _ = raw_connection(banks[0])
    with conn:
        made = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' AND indexdef "
                            "LIKE '%hnsw%' ORDER BY indexname").fetchall()
    assert sorted(name for name, _ in made) == sorted([postgres.team_index("ops"), postgres.team_index("lab")])
    assert all("WHERE (team = " in d for _, d in made)
    assert [len(b.memories(t)) for b, t in zip(banks, ("ops", "lab"))] == [8, 8]
    for b in banks:
        b.close()


def test_writers_opening_a_new_bank_at_once_bind_its_embedder_once(pg_url):
    """Several processes open one new bank with an embedder in the same instant: each opens it, none fails on
    the embedder's row, and the bank records that embedder once (CI once raced here to a UniqueViolation)."""
    url = pg_url()
    banks = at_once(*[lambda: MemoryBank(url, HashEmbedder())] * 6)
    assert {(b.embedder_name, b.dim) for b in banks} == {(HashEmbedder().name, HashEmbedder().dim)}
    conn, _ = raw_connection(banks[0])
    with conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key IN ('embedder', 'dim')").fetchone()[0] == 2
    for b in banks:
        b.close()


def test_the_scanned_vector_stays_in_the_row_and_the_originals_go_to_toast(pg_url):
    """Every exact scan reads ``embedding``; rows of 384-dim vectors are wide enough (two of them ~3.2 kB) that
    PostgreSQL would move one out of line, and a scan that detoasts per row was 4.7x slower at 100k. The storage
    is set when the dimension is (``bind_dim``: a type change resets it), and again on a schema-1 upgrade."""
    url = pg_url()
    with MemoryBank(url, HashEmbedder(dim=384)) as bank:
        bank.apply_group(G1)
        conn, _ = raw_connection(bank, "ops")

    def storage():
        return dict(conn.execute("SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'memories'::regclass "
                                 "AND attname IN ('embedding', 'original_embedding')").fetchall())

    def toasted():  # bytes in the table's TOAST relation
        return conn.execute("SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'memories'"
                            ).fetchone()[0]

    assert storage() == {"embedding": "m", "original_embedding": "e"}
    assert toasted() > 0  # the originals: two 1.5 kB vectors do not fit one row
    conn.execute("ALTER TABLE memories DROP COLUMN original_embedding")
    conn.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE EXTERNAL")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    MemoryBank(url, HashEmbedder(dim=384)).close()
    assert storage() == {"embedding": "m", "original_embedding": "e"}
    conn.close()


def test_the_eval_harness_builds_its_banks_in_postgres_and_scores_as_on_sqlite(tmp_path, pg_url, settings, embedder):
    """`python -m memgraft.eval collab --banks-url postgresql://…`: the raw, judge and rules banks of one stream (the
    same team names) in one database, a schema each, and every figure as over the SQLite files."""
    from memgraft.collab.data.generator import generate
    from memgraft.collab.evaluate.harness import EvalOptions, run_eval
    from memgraft.models.reranker import load_reranker

    data = generate(seed=3, teams=2, groups=6)
    reranker = load_reranker(settings, embedder)
    methods = ("dense", "rules-updater", "hicomer")
    url = pg_url()
    reports = {where: run_eval(data, settings, tmp_path / where, EvalOptions(methods=methods, banks_url=banks_url),
                               embedder=embedder, reranker=reranker)
               for where, banks_url in (("sqlite", None), ("postgres", url))}
    assert not list((tmp_path / "postgres").glob("*.sqlite"))
    with psycopg.connect(url) as conn:
        schemas = {r[0] for r in conn.execute("SELECT DISTINCT table_schema FROM information_schema.tables "
                                              "WHERE table_name = 'memories'")}
    assert schemas == {"memgraft_eval_raw", "memgraft_eval_judge", "memgraft_eval_rules"}
    sq, pg = reports["sqlite"], reports["postgres"]
    assert pg.validity == sq.validity and pg.validity["judge"]["precision"] > pg.validity["raw"]["precision"]
    assert {k: {m: v for m, v in u.items() if m != "seconds"} for k, u in pg.updaters.items()} == \
        {k: {m: v for m, v in u.items() if m != "seconds"} for k, u in sq.updaters.items()}
    for method in methods:
        assert [(r["id"], r["retrieved"]) for r in pg.questions if r["method"] == method] == \
            [(r["id"], r["retrieved"]) for r in sq.questions if r["method"] == method]
