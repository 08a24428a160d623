"""HGMem's Table 4 graph: a seeded half of a real graph's entities and relations dropped."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from memgraft.graph.degrade import app, write_degraded
from memgraft.graph.folder import GraphFolder
from memgraft.graph.store import GraphStore

pytestmark = pytest.mark.slow


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
