"""pipelines/demo.py's slice of the corpus and its table of parts (the demo itself is `make demo`)."""

from __future__ import annotations

import json

from pipelines.build_graphs import BuildReport
from pipelines.demo import BUILD_PARTS, build_rows, corpus_slice


def test_the_slice_keeps_the_first_passages_under_one_name(tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": f"t{i}", "text": f"passage {i}"} for i in range(50)]))
    path, kept = corpus_slice(str(corpus), 20, tmp_path / "out")
    assert [d["title"] for d in json.loads(open(path).read())] == [f"t{i}" for i in range(20)]
    assert kept.startswith("first 20 of 50 passages")
    again, _ = corpus_slice(str(corpus), 30, tmp_path / "out")  # a larger slice: the same file, appended to
    assert again == path and len(json.loads(open(path).read())) == 30
    assert corpus_slice(str(corpus), 0, tmp_path / "out")[0] == str(corpus)  # 0: the whole corpus
    assert corpus_slice(str(corpus), 500, tmp_path / "out")[0] == str(corpus)


def test_every_build_part_gets_a_row_and_the_rest_is_accounted():
    timings = {"read": 2.0, "chunk_extract_embed": 10.0, "merge": 1.0, "embed_graph": 5.0, "index": 0.5,
               "total": 20.0, "write": 0.2}
    report = BuildReport(output="g", counts={"documents": 3, "chunks": 4, "entities": 5, "relations": 6},
                         processed_docs=3, new_chunks=4, new_tokens=100, rejected=[], extract_failures=[], plan={},
                         timings=timings)
    rows = build_rows(report)
    assert [r[0] for r in rows[:-1]] == list(BUILD_PARTS.values())
    assert rows[-1][1] == 20.0 - 18.5  # total less the parts inside run_build's clock (write is after it)
