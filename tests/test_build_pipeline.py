"""End-to-end graph builds on a local Ray: the folder, rebuilds, append/delete, bad input, a killed worker."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pyarrow.parquet as pq
import pytest

from memgraft.graph.folder import TABLES
from memgraft.graph.spacy_extractor import SpacyExtractor
from tests.conftest import DATA

pytestmark = pytest.mark.slow


def build(settings, inp, out, **kw):
    from pipelines.build_graphs import run_build

    return run_build(settings, str(inp) if inp else None, str(out), **kw)


def tables(folder: Path) -> dict:
    return {name: pq.read_table(folder / f"{name}.parquet") for name in TABLES}


def assert_same_tables(a: Path, b: Path) -> None:
    ta, tb = tables(a), tables(b)
    for name in TABLES:
        assert ta[name].equals(tb[name]), f"{name}.parquet differs"


def test_end_to_end_folder(slice_graph):
    out, report = slice_graph
    manifest = json.loads((out / "manifest.json").read_text())
    t = tables(out)
    assert manifest["counts"] == {k: t[k].num_rows for k in ("documents", "chunks", "entities", "relations")}
    assert report.counts["documents"] == 30 and report.counts["chunks"] >= 30 and report.rejected == []
    assert manifest["models"] == {"embedder": "all-MiniLM-L6-v2", "dim": 384, "extractor": "spacy",
                                  "spacy_model": "en_core_web_sm"}
    assert set(manifest["indexes"]) == {"chunks", "entities", "relations"}
    assert manifest["indexes"]["chunks"] == {"kind": "flat", "vectors": t["chunks"].num_rows}
    chunk_ids = set(t["chunks"].column("chunk_id").to_pylist())
    for ids in t["entities"].column("chunk_ids").to_pylist():
        assert ids and set(ids) <= chunk_ids
    entity_ids = set(t["entities"].column("entity_id").to_pylist())
    rel = t["relations"].to_pylist()
    assert all(r["source_id"] in entity_ids and r["target_id"] in entity_ids for r in rel)
    for kind in ("chunks", "entities", "relations"):
        vecs = np.load(out / "vectors" / f"{kind}.npy")
        assert vecs.shape == (t[kind].num_rows, 384)
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-2)
    assert max(t["chunks"].column("n_tokens").to_pylist()) <= 200
    # each embedding stage names the dtype its model ran in ("auto" resolves per machine); the graph keeps no trace
    assert set(report.dtypes) == {"embed_chunks", "embed_graph"}
    ran = {k: v.split(" (") for k, v in report.dtypes.items()}
    assert ran["embed_chunks"][1] == "driver)" and ran["embed_graph"][1] == "driver)"  # the local profile
    assert {ran["embed_chunks"][0], ran["embed_graph"][0]} <= {"float32", "bfloat16"}
    assert "embedder_dtype" not in t["chunks"].column_names


@pytest.mark.timeout(300)
def test_chunks_embedded_on_an_actor_pool_give_the_same_graph(slice_graph, settings, musique_slice, tmp_path):
    """The cluster's way (an embedding actor pool) and the local profile's (the driver, as blocks stream out of
    extraction) give the same tables and the same vectors, up to bf16 batches padded differently. Two extract
    actors and one embedding actor hold 1.5 of the 2 CPUs: with a Ray Data repartition in the stream (an
    all-to-all step of whole-CPU tasks) this build never started."""
    out, _ = slice_graph
    pool = settings.model_copy(update={"pipeline": settings.pipeline.model_copy(
        update={"embed_chunks_in_driver": False, "extract_actors": 2, "chunk_batch_size": 8})})
    report = build(pool, musique_slice, tmp_path / "pool")
    assert report.dtypes["embed_chunks"].endswith("(actors)")
    assert_same_tables(out, tmp_path / "pool")
    np.testing.assert_allclose(np.load(out / "vectors" / "chunks.npy"), np.load(tmp_path / "pool" / "vectors" / "chunks.npy"),
                               atol=2e-2)


def test_a_failure_in_the_stream_reaches_the_driver(ray_local, settings):
    import pyarrow as pa
    import ray

    from memgraft.progress import Progress
    from pipelines.driver_embed import embed_stream

    def broken(batch):
        if 7 in batch["id"]:
            raise ValueError("chunk 7 is unreadable")
        return {"text": [f"passage {i}" for i in batch["id"]]}

    ds = ray.data.range(20, override_num_blocks=4).map_batches(broken, batch_size=5)
    with pytest.raises(Exception, match="chunk 7 is unreadable"):
        embed_stream(ds, settings, Progress("test", enabled=False), lambda b: b.num_rows)
    ok = ray.data.range(6).map_batches(lambda b: {"text": [f"passage {i}" for i in b["id"]]})
    table = embed_stream(ok, settings, Progress("test", enabled=False), lambda b: b.num_rows)
    assert table.num_rows == 6 and table.schema.field("embedding").type == pa.list_(pa.float32(), 384)


def test_a_build_that_started_ray_stops_it_before_the_drivers_own_work(tmp_path):
    """In its own process with a Ray of its own (RAY_ADDRESS=local): the build stops it once the rest runs in
    the driver, and the graph is whole; a build that joined a running Ray (every other test) leaves it up.
    Three passages: the Ray it starts and stops is what is tested, not the size of the graph."""
    import subprocess

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(json.loads((DATA / "musique" / "musique_train_corpus.json").read_text())[:3]))

    code = ("import json, sys, ray; from pipelines.build_graphs import run_build; "
            "from memgraft.config import load_settings; "
            "r = run_build(load_settings('local'), sys.argv[1], sys.argv[2]); "
            "print(json.dumps({'released': 'release_ray' in r.timings, 'up': ray.is_initialized(), "
            "'entities': r.counts['entities']}))")
    env = {**os.environ, "RAY_ADDRESS": "local"}
    proc = subprocess.run([sys.executable, "-c", code, str(corpus), str(tmp_path / "g")], capture_output=True,
                          text=True, timeout=600, env=env, cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["released"] and not out["up"] and out["entities"] > 0
    assert (tmp_path / "g" / "manifest.json").exists()


def test_rebuild_gives_identical_tables(slice_graph, settings, musique_slice, tmp_path):
    out, report = slice_graph
    assert "release_ray" not in report.timings  # it joined the tests' Ray: that stays up
    build(settings, musique_slice, tmp_path / "again")
    assert_same_tables(out, tmp_path / "again")


def _passages(n: int, start: int = 200) -> list[str]:
    corpus = json.loads((DATA / "musique" / "musique_train_corpus.json").read_text())
    return [f"{p['title']}\n\n{p['text']}" for p in corpus[start:start + n]]


def test_append_change_and_delete_match_a_fresh_build(ray_local, settings, tmp_path):
    """One fresh build, then a change, a delete and an append that together come back to the same documents:
    the updated graph must equal that fresh build (a copy kept aside), table for table."""
    a, b, b2, c = _passages(4)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in (("a.txt", a), ("b.txt", b), ("c.txt", c)):
        (docs / name).write_text(text)
    graph, fresh = tmp_path / "graph", tmp_path / "fresh"
    build(settings, docs, graph)
    shutil.copytree(graph, fresh)  # the fresh build of a, b and c
    first = tables(graph)
    a_chunks = [r for r in first["chunks"].to_pylist() if r["doc_id"] == "a.txt"]

    (docs / "b.txt").write_text(b2)  # changed
    (docs / "c.txt").unlink()  # not in the input: an append keeps it
    report = build(settings, docs, graph, append=True)
    assert report.plan["added"] == [] and report.plan["replaced"] == ["b.txt"]
    assert report.plan["unchanged_count"] == ["1"] and report.processed_docs == 1  # a.txt was not recomputed
    now = tables(graph)
    assert [r for r in now["chunks"].to_pylist() if r["doc_id"] == "a.txt"] == a_chunks
    texts = " ".join(now["chunks"].column("text").to_pylist())
    assert b[:40] not in texts and b2[:40] in texts and c[:40] in texts

    c_chunks = {x["chunk_id"] for x in now["chunks"].to_pylist() if x["doc_id"] == "c.txt"}
    c_only = {r["entity_id"] for r in now["entities"].to_pylist() if set(r["chunk_ids"]) <= c_chunks}
    assert c_only
    report = build(settings, None, graph, deletes=["c.txt", "missing.txt"])  # --delete alone, no input
    assert report.plan["deleted"] == ["c.txt"] and report.plan["unknown_deletes"] == ["missing.txt"]
    after = tables(graph)
    assert not c_only & set(after["entities"].column("entity_id").to_pylist())
    assert "c.txt" not in after["chunks"].column("doc_id").to_pylist()

    (docs / "b.txt").write_text(b)  # changed back
    (docs / "c.txt").write_text(c)  # new again
    report = build(settings, docs, graph, append=True)
    assert report.plan["added"] == ["c.txt"] and report.plan["replaced"] == ["b.txt"] and report.processed_docs == 2
    assert_same_tables(graph, fresh)
    assert np.allclose(np.load(graph / "vectors" / "chunks.npy"), np.load(fresh / "vectors" / "chunks.npy"), atol=2e-2)


def test_bad_inputs_are_rejected_and_the_rest_is_built(ray_local, settings, tmp_path):
    docs = tmp_path / "mixed"
    docs.mkdir()
    (docs / "good.txt").write_text(_passages(1)[0])
    (docs / "empty.txt").write_text("")
    (docs / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (docs / "records.jsonl").write_text('{"id": "r1", "body": "no text"}\n{"id": "r2", "text": "Rome is in Italy."}\n')
    (docs / "photo.png").write_bytes(b"\x89PNG")
    with (docs / "huge.txt").open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    out = tmp_path / "g"
    report = build(settings, docs, out)
    manifest = json.loads((out / "manifest.json").read_text())
    reasons = {r["source"]: r["reason"] for r in manifest["rejected"]}
    assert set(reasons) == {"empty.txt", "latin1.txt", "records.jsonl[0]", "photo.png", "huge.txt"}
    assert "over the limit" in reasons["huge.txt"] and reasons["latin1.txt"].startswith("undecodable")
    assert report.counts["documents"] == 2
    assert sorted(tables(out)["documents"].column("doc_id").to_pylist()) == ["good.txt", "r2"]


class DyingOnceExtractor(SpacyExtractor):
    """Kills its own worker process the first time it is called (a marker file remembers)."""

    def __init__(self, settings, marker: str):
        super().__init__(settings.extraction, settings.models.spacy_model)
        self.marker = marker

    def extract(self, texts):
        if not os.path.exists(self.marker):
            Path(self.marker).write_text("killed")
            os._exit(1)
        return super().extract(texts)


def dying_factory(settings, marker):
    return DyingOnceExtractor(settings, marker)


def test_a_killed_worker_is_retried_and_the_output_is_the_same(slice_graph, settings, musique_slice, tmp_path):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = tmp_path / "killed.marker"
    out = tmp_path / "survivor"
    build(settings, musique_slice, out, extractor_factory=functools.partial(dying_factory, marker=str(marker)))
    assert marker.read_text() == "killed"
    assert_same_tables(slice_graph[0], out)


def test_graph_texts_embed_alike_in_the_driver_and_on_the_actor_pool(ray_local, settings):
    from pipelines.build_graphs import embed_texts

    texts = ["Paris: capital of France", "a", "Paris: capital of France", "Lyon: a city on the Rhone " * 5]
    pool = settings.model_copy(update={"pipeline": settings.pipeline.model_copy(update={"driver_embed_max_texts": 0})})
    driver = settings.model_copy(update={"pipeline": settings.pipeline.model_copy(update={"driver_embed_max_texts": 10})})
    a, b = embed_texts(pool, texts, 384), embed_texts(driver, texts, 384)
    assert a.shape == b.shape == (4, 384)
    np.testing.assert_allclose(a, b, atol=2e-2)  # bf16 batches padded differently: close, not equal
    np.testing.assert_array_equal(b[0], b[2])  # a repeated text is embedded once
