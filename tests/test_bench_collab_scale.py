"""bench/collab_scale.py at a toy size: both banks hold the same rows, and below a team's HNSW size both find
exactly the exact top-k (a cached PostgreSQL matrix that missed a team's rows once found none)."""

from __future__ import annotations

import json


def test_the_scale_bench_runs_and_both_backends_are_exact(tmp_path):
    from bench.collab_scale import main

    result = main(["--teams", "4", "--memories", "600", "--big-team", "300", "--queries", "6", "--as-of-queries", "2",
                   "--ingest-groups", "4", "--ingest-teams", "2", "--out", str(tmp_path)])
    assert result["recall"] == {b: {"big": 1.0, "small": 1.0} for b in ("sqlite", "postgresql")}
    assert {b: f["memories"] for b, f in result["build"].items()} == {"sqlite": 600, "postgresql": 600}
    assert all(x["groups"] == 4 for x in result["ingest"].values())
    rows = set(result["search"]["sqlite"])
    assert rows == {"search, big team", "search, small team", "as-of search, big team", "as-of search, small team"}
    assert rows < set(result["search"]["postgresql"])
    assert json.loads((tmp_path / "bench_collab_scale.json").read_text())["args"]["teams"] == 4
