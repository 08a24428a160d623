"""HGMem's Table 4 graph: a seeded half of a real graph's entities and relations dropped."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from memgraft.graph.degrade import app, degrade, write_degraded
from memgraft.graph.folder import GraphData, GraphFolder
from memgraft.graph.store import GraphStore


def test_drop_counts_and_each_kept_rows_vector_on_a_random_graph():
    rng = np.random.default_rng(1)
    ents = [f"e{i:03d}" for i in range(200)]
    pairs = sorted({tuple(sorted(rng.choice(ents, 2, replace=False))) for _ in range(700)})
    rels = [f"r{i:03d}" for i in range(len(pairs))]
    tables = {"entities": pa.table({"entity_id": ents}),
              "relations": pa.table({"relation_id": rels, "source_id": [a for a, _ in pairs],
                                     "target_id": [b for _, b in pairs]}),
              "entity_mentions": pa.table({"entity_id": ents, "chunk_id": ["c0"] * len(ents)}),
              "relation_mentions": pa.table({"relation_id": rels, "chunk_id": ["c0"] * len(rels)})}
    vectors = {"entities": np.arange(len(ents), dtype=np.float32)[:, None].repeat(4, 1),
               "relations": np.arange(len(rels), dtype=np.float32)[:, None].repeat(4, 1)}
    data = GraphData(tables, vectors, {"counts": {}})
    out = degrade(data, drop=0.5, seed=0)
    kept = out.tables["entities"].column("entity_id").to_pylist()
    assert len(kept) == 100 and len(out.tables["entity_mentions"]) == 100
    linked = [r for r, (a, b) in zip(rels, pairs) if a in set(kept) and b in set(kept)]
    kept_rels = out.tables["relations"].column("relation_id").to_pylist()
    assert set(kept_rels) < set(linked) and abs(len(kept_rels) - len(linked) / 2) <= 0.2 * len(linked)
    assert out.manifest["degraded"]["relations"] == [len(kept_rels), len(rels)]
    for kind, ids in (("entities", kept), ("relations", kept_rels)):  # each kept row keeps its own vector
        assert [int(i[1:]) for i in ids] == out.vectors[kind][:, 0].astype(int).tolist()
    assert degrade(data, drop=0.5, seed=0).tables["relations"].equals(out.tables["relations"])  # seeded
    assert not degrade(data, drop=0.5, seed=1).tables["entities"].equals(out.tables["entities"])


@pytest.mark.slow
def test_half_the_graph_dropped_seeded_consistent_and_loadable(slice_graph, tmp_path, embedder):
    full = GraphFolder(str(slice_graph[0])).read()
    info = write_degraded(str(slice_graph[0]), str(tmp_path / "half"), drop=0.5, seed=0)
    half = GraphFolder(str(tmp_path / "half")).read()
    n_ent = full.tables["entities"].num_rows
    assert info["entities"] == [half.tables["entities"].num_rows, n_ent] and abs(info["entities"][0] - n_ent / 2) <= 1
    assert half.tables["relations"].num_rows <= full.tables["relations"].num_rows / 2 + 1
    kept = set(half.tables["entities"].column("entity_id").to_pylist())
    for r in half.tables["relations"].to_pylist():  # no relation hangs from a dropped entity
        assert r["source_id"] in kept and r["target_id"] in kept
    assert half.tables["chunks"].equals(full.tables["chunks"])  # the documents are the same
    # each kept row keeps its own vector
    row = {e: i for i, e in enumerate(full.tables["entities"].column("entity_id").to_pylist())}
    for i, e in enumerate(half.tables["entities"].column("entity_id").to_pylist()[:20]):
        assert np.array_equal(half.vectors["entities"][i], full.vectors["entities"][row[e]])
    store = GraphStore.load(str(tmp_path / "half"), embedder)
    assert {h.id for h in store.search_entities("journal", 5)} <= kept
    assert half.manifest["degraded"]["seed"] == 0 and half.manifest["counts"]["entities"] == len(kept)
    res = CliRunner().invoke(app, ["--graph", str(slice_graph[0]), "--output", str(tmp_path / "again")])
    assert res.exit_code == 0 and "kept" in res.output
    again = GraphFolder(str(tmp_path / "again")).read()  # the same seed drops the same ones
    assert again.tables["entities"].column("entity_id").to_pylist() == list(
        half.tables["entities"].column("entity_id").to_pylist())
