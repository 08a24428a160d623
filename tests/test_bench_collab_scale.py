"""bench/collab_scale.py at a toy size: both banks hold the same rows, and below a team's HNSW size both find
exactly the exact top-k (a cached PostgreSQL matrix that missed a team's rows once found none)."""

from __future__ import annotations

import json


def test_the_scale_bench_runs_and_both_backends_are_exact(tmp_path):
    from bench.collab_scale import main

    result = main(["--teams", "4", "--memories", "600", "--big-team", "300", "--queries", "6", "--as-of-queries", "2",
                   "--ingest-groups", "4", "--ingest-teams", "2", "--vectors", "random", "--shared-buffers", "256MB",
                   "--out", str(tmp_path)])
    assert result["recall"] == {b: {"big": 1.0, "small": 1.0} for b in ("sqlite", "postgresql")}
    assert {b: f["memories"] for b, f in result["build"].items()} == {"sqlite": 600, "postgresql": 600}
    assert all(x["groups"] == 4 for x in result["ingest"].values())
    rows = set(result["search"]["sqlite"])
    assert rows == {"search, big team", "search, small team", "as-of search, big team", "as-of search, small team",
                    "search, big team, after another bank's group"}
    assert result["search"]["postgresql"]["search, big team, after another bank's group"]["n"] == 20
    assert rows < set(result["search"]["postgresql"])
    assert json.loads((tmp_path / "bench_collab_scale.json").read_text())["args"]["teams"] == 4


def test_the_scale_bench_on_clustered_vectors_finds_the_exact_top_k_through_a_team_index(tmp_path):
    """Clustered vectors (the default, as real embeddings are) through the big team's own HNSW index (the
    threshold lowered under it): recall@10 at least 0.98 against exact search, at hnsw.ef_search 40 too."""
    from bench.collab_scale import main

    args = ["--teams", "3", "--memories", "900", "--big-team", "800", "--queries", "20", "--as-of-queries", "1",
            "--ingest-groups", "2", "--ingest-teams", "1", "--exact-max-rows", "300", "--ef-sweep", "40",
            "--shared-buffers", "256MB"]
    result = main([*args, "--out", str(tmp_path)])
    assert result["args"]["vectors"] == "clustered"
    assert result["build"]["postgresql"]["index_s"] > 0  # the big team got its own index
    assert result["recall"]["postgresql"]["big"] >= 0.98 and result["recall"]["sqlite"]["big"] == 1.0
    assert result["ef_sweep"]["40"]["recall"] >= 0.98


def test_without_out_the_scale_bench_keeps_only_its_figures(capsys):
    """Without ``--out`` the banks go once the figures are written: full-size runs left 4 GB each in /tmp."""
    from pathlib import Path

    from bench.collab_scale import main

    main(["--teams", "2", "--memories", "200", "--big-team", "100", "--queries", "2", "--as-of-queries", "1",
          "--ingest-groups", "1", "--ingest-teams", "1", "--vectors", "random", "--shared-buffers", "256MB"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("figures written to "))
    figures = Path(line.removeprefix("figures written to "))
    try:
        assert [p.name for p in figures.parent.iterdir()] == ["bench_collab_scale.json"]
        assert json.loads(figures.read_text())["args"]["teams"] == 2
    finally:
        figures.unlink()
        figures.parent.rmdir()
