"""Evaluation of HGMem runs: `score` on hand-made run folders with numbers worked out by hand."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memgraft.eval import datasets, report
from memgraft.eval.__main__ import app
from tests.eval_helpers import _musique, _nocha_rows, _write_run, judge_of, user


# -- score on a hand-made run ---------------------------------------------------------------------------


def _graph(tmp_path: Path) -> Path:
    graph = tmp_path / "graph"
    graph.mkdir()
    pq.write_table(pa.table({"chunk_id": ["c1", "c2", "c3", "c4", "c5"], "doc_id": ["D1", "D1", "D2", "D3", "D4"],
                             "text": [""] * 5}), graph / "chunks.parquet")
    return graph


GOLD = {"q1": {"answers": ["Paris", "City of Light"], "supporting_doc_ids": ["D1", "D2"]},
        "q2": {"answers": ["1999"], "supporting_doc_ids": ["D3", "D4"]}}


def _row(qid: str, method: str, answer, error=None, prompt=0, completion=0, calls=0, seconds=0.0, steps=1):
    return {"id": qid, "question": f"question {qid}?", "method": method, "answer": answer, "error": error,
            "steps": steps, "llm_calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
            "seconds": seconds, **GOLD[qid]}


def hgmem_trace(*steps: list[list[str]], answer: list[str]) -> dict:
    return {"question": "?", "steps": [{"step": i, "subqueries": [{"chunk_ids": ids} for ids in sq]}
                                       for i, sq in enumerate(steps)], "answer": {"chunk_ids": answer}}


def make_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two run folders (hgmem; naive and graph in one file) and the graph they used."""
    hg, base = tmp_path / "run_hgmem", tmp_path / "run_base"
    _write_run(hg, [
        # q1: "the Paris" -> EM 1, F1 1; chunks c1 c2 c4 (+ answer c1) -> D1 D3: recall 1/2, 2 passages
        (_row("q1", "hgmem", "the Paris", prompt=100, completion=20, calls=4, seconds=1.0, steps=2),
         hgmem_trace([["c1", "c2"], ["c4"]], answer=["c1"])),
        # q2: "in 1999 it was" vs "1999": EM 0, F1 = 2 * (1/4 * 1) / (1/4 + 1) = 0.4;
        # chunks c3, then c4 c5 (+ answer c5) -> D2 D3 D4: recall 2/2, 3 passages
        (_row("q2", "hgmem", "in 1999 it was", prompt=300, completion=40, calls=6, seconds=3.0, steps=3),
         hgmem_trace([["c3"]], [["c4"], ["c5"]], answer=["c5"])),
    ], absolute=True)
    _write_run(base, [
        # naive q1: wrong, retrieved c3 -> D2: recall 1/2; q2 failed, nothing retrieved
        (_row("q1", "naive", "London", prompt=50, completion=10, calls=1, seconds=0.5),
         {"question": "?", "retrieved": {"chunk_ids": ["c3"], "scores": [0.5]}}),
        (_row("q2", "naive", None, error="TimeoutError: slow", seconds=2.5, steps=0), None),
        # graph: q1 right, c1 c3 -> D1 D2: recall 1; q2 first failed, then answered (the last line counts)
        (_row("q1", "graph", "Paris.", prompt=80, completion=10, calls=1, seconds=1.0),
         {"question": "?", "retrieved": {"entity_ids": ["e1"], "chunk_ids": ["c1", "c3"]}}),
        (_row("q2", "graph", None, error="boom"), None),
        (_row("q2", "graph", "1999", prompt=120, completion=10, calls=1, seconds=2.0),
         {"question": "?", "retrieved": {"chunk_ids": ["c5"]}}),
    ])
    return hg, base, _graph(tmp_path)


@pytest.fixture()
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_runs(tmp_path)


def test_trace_chunk_ids_take_everything_retrieved():
    assert report.trace_chunk_ids(hgmem_trace([["c1", "c2"], ["c2", "c4"]], [["c9"]], answer=["c1", "c7"])) == \
        ["c1", "c2", "c4", "c9", "c7"]
    assert report.trace_chunk_ids({"retrieved": {"chunk_ids": ["b", "a", "b"]}}) == ["b", "a"]


def test_score_musique_runs_by_hand(runs):
    hg, base, graph = runs
    result = report.score_runs([hg, base], "musique", graph=str(graph))
    m = result["methods"]
    assert list(m) == ["hgmem", "naive", "graph"]
    assert m["hgmem"]["em"] == 0.5 and m["hgmem"]["f1"] == pytest.approx((1 + 0.4) / 2)
    assert m["hgmem"]["recall"] == pytest.approx((0.5 + 1.0) / 2) and m["hgmem"]["passages/q"] == 2.5
    assert m["hgmem"]["tokens/q"] == (120 + 340) / 2 and m["hgmem"]["llm_calls/q"] == 5
    assert m["hgmem"]["seconds/q"] == 2.0 and m["hgmem"]["steps/q"] == 2.5 and m["hgmem"]["failures"] == 0
    assert m["naive"]["em"] == 0 and m["naive"]["f1"] == 0 and m["naive"]["recall"] == 0.25
    assert m["naive"]["failures"] == 1 and m["naive"]["questions"] == 2 and m["naive"]["passages/q"] == 0.5
    assert m["naive"]["tokens/q"] == 30 and m["naive"]["seconds/q"] == 1.5
    assert m["graph"]["em"] == 1 and m["graph"]["f1"] == 1 and m["graph"]["recall"] == 0.75
    assert m["graph"]["failures"] == 0 and m["graph"]["questions"] == 2
    per_q = {(q["method"], q["id"]): q for q in result["questions"]}
    assert per_q[("hgmem", "q1")]["missed"] == ["D2"] and per_q[("naive", "q2")]["failed"]
    # without the graph, no recall (and a note saying so)
    result = report.score_runs([hg], "musique")
    assert "recall" not in result["methods"]["hgmem"] and "recall" in result["note"]


def test_score_refuses_a_graph_the_run_did_not_use(runs, tmp_path):
    hg, _, _ = runs
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"chunk_id": ["c1"], "doc_id": ["D1"]}), other / "chunks.parquet")
    with pytest.raises(ValueError, match="not in the graph's chunks.parquet"):
        report.score_runs([hg], "musique", graph=str(other))


def test_gold_joined_from_the_dataset_file(tmp_path):
    """A run made straight from MuSiQue's JSON: its lines carry no reference answers."""
    questions, _ = _musique(tmp_path)
    run = tmp_path / "run"
    graph = tmp_path / "g"
    graph.mkdir()
    pq.write_table(pa.table({"chunk_id": ["k1", "k2"], "doc_id": ["A #2", "B"]}), graph / "chunks.parquet")
    _write_run(run, [({"id": "2hop__1", "question": "Q?", "method": "naive", "answer": "Y", "answer_aliases": ["y"],
                       "error": None}, {"retrieved": {"chunk_ids": ["k2", "k1"]}})])
    m = report.score_runs([run], "musique", graph=str(graph), questions=questions)["methods"]["naive"]
    assert m["em"] == 1.0 and m["recall"] == 1.0 and m["passages/q"] == 2
    # the same gold from a questions file written by `questions`
    qfile = tmp_path / "q.jsonl"
    datasets.write_questions(datasets.load_dataset("musique", questions), qfile)
    assert report.score_runs([run], "musique", graph=str(graph), questions=qfile)["methods"]["naive"]["em"] == 1.0


def test_same_method_in_two_folders_is_shown_per_folder(runs, tmp_path):
    hg, _, graph = runs
    again = tmp_path / "again"
    again.mkdir()
    (again / "answers.jsonl").write_text((hg / "answers.jsonl").read_text())
    result = report.score_runs([hg, again], "musique", graph=str(graph))
    assert list(result["methods"]) == ["hgmem (run_hgmem)", "hgmem (again)"]


def test_score_command_prints_the_table_and_writes_json(runs):
    hg, base, graph = runs
    res = CliRunner().invoke(app, ["score", "--run", str(hg), "--run", str(base), "--dataset", "musique",
                                   "--graph", str(graph)])
    assert res.exit_code == 0, res.output
    assert "hgmem" in res.output and "naive" in res.output and "recall" in res.output and "0.750" in res.output
    written = json.loads((hg.parent / "scores.musique.json").read_text())
    assert written["methods"]["graph"]["recall"] == 0.75 and len(written["questions"]) == 6
    res = CliRunner().invoke(app, ["score", "--run", str(hg / "nope"), "--dataset", "musique"])
    assert res.exit_code == 2 and "no answers.jsonl" in res.output


def test_score_runs_with_a_judge_on_nocha(tmp_path):
    run = tmp_path / "run"
    _write_run(run, [(r, None) for r in _nocha_rows()])
    judge, _ = judge_of([json.dumps({"reason": "", "verdict": "unclear"})])
    result = report.score_runs([run], "nocha", judge=judge)
    assert result["methods"]["hgmem"]["pair_accuracy"] == pytest.approx(1 / 3)
    assert result["judge"]["calls"] == 1 and result["judge"]["failures"] == 0
    assert report.columns(result)[:2] == ["pair_accuracy", "claim_accuracy"]
    with pytest.raises(ValueError, match="LLM judge"):
        report.score_runs([run], "nocha")


def test_longbench_baseline_is_one_of_the_methods(tmp_path):
    run = tmp_path / "run"
    rows = [{"id": "1", "question": "Q", "method": m, "answer": a, "error": None}
            for m, a in (("hgmem", "rich answer"), ("naive", "plain"))]
    _write_run(run, [(r, None) for r in rows])

    def script(req):
        text = user(req)
        if "Rate one answer" in text:
            return json.dumps({"reason": "", "score": 7})
        a = text.split("Answer A: ")[1].split("\n\n")[0]
        return json.dumps({"reason": "", "winner": "A" if "rich" in a else "B"})

    judge, _ = judge_of(script)
    result = report.score_runs([run], "longbench", judge=judge, baseline="naive")
    assert result["methods"]["hgmem"]["diversity_win"] == 1.0 and "diversity_win" not in result["methods"]["naive"]
    assert result["methods"]["naive"]["comprehensiveness"] == 7
    with pytest.raises(ValueError, match="must name one"):
        report.score_runs([run], "longbench", judge=judge, baseline="hgmem-nomerge")


def test_hyperedge_size_overall_and_per_question_kind():
    from memgraft.eval.scoring import usage_metrics

    rows = [{"id": "2hop__1", "hyperedge_size": 2.0}, {"id": "2hop__2", "hyperedge_size": 3.0},
            {"id": "4hop1__3", "hyperedge_size": 5.0}, {"id": "4hop1__4", "error": "x", "answer": None}]
    m = usage_metrics(rows)
    assert m["hyperedge_size"] == pytest.approx(10 / 3)
    assert m["hyperedge_size[2hop]"] == 2.5 and m["hyperedge_size[4hop1]"] == 5.0
    assert "hyperedge_size" not in usage_metrics([{"id": "q", "answer": "a"}])  # naive, graph: no memory


# -- grounding of the final memory and the answer step's recall@5 ----------------------------------------


def _memory(vertices: list[str], points: list[tuple[list[str], str | None]]) -> dict:
    """A final-memory snapshot: vertex ids, and points as (chunk ids, merged_into)."""
    return {"version": 1, "next_id": len(points) + 1,
            "vertices": [{"entity_id": v, "name": v, "in_graph": True, "chunk_ids": [], "description": ""}
                         for v in vertices],
            "points": [{"point_id": f"p{i + 1}", "description": "", "vertex_ids": vertices[:2], "chunk_ids": chunks,
                        "merged_into": into} for i, (chunks, into) in enumerate(points)]}


def test_memory_grounding_and_answer_recall_at_5_by_hand(tmp_path):
    graph = _graph(tmp_path)  # c1 c2 -> D1, c3 -> D2, c4 -> D3, c5 -> D4
    pq.write_table(pa.table({"entity_id": ["e1", "e2", "e3"], "name": ["A", "B", "C"]}), graph / "entities.parquet")
    run = tmp_path / "run"
    _write_run(run, [
        # q1 (gold D1 D2): answer given c4 c1 c2 c3 -> D3 D1 D2 within the first 5: recall 1.
        # Vertices e1 e2 "ghost" (2 of 3 in the graph); points: p1 cites c1, p2 cites only "zz" (not a graph
        # chunk), p3 cites nothing but was merged into p1 (inactive: not counted) -> 1 of 2 active points cite
        (_row("q1", "hgmem", "Paris"),
         {"steps": [], "answer": {"chunk_ids": ["c4", "c1", "c2", "c3"]},
          "final_memory": _memory(["e1", "e2", "ghost"], [(["c1"], None), (["zz"], None), ([], "p1")])}),
        # q2 (gold D3 D4): answer given c1 c3 c4 -> D1 D2 D3: recall 1/2. Vertices e3 e1 (2 of 2); p1 cites c3
        (_row("q2", "hgmem", "1999"),
         {"steps": [], "answer": {"chunk_ids": ["c1", "c3", "c4"]},
          "final_memory": _memory(["e3", "e1"], [(["c3"], None)])}),
    ])
    m = report.score_runs([run], "musique", graph=str(graph))["methods"]["hgmem"]
    assert m["answer_recall@5"] == pytest.approx((1.0 + 0.5) / 2) and m["n_answer_recall@5"] == 2
    assert m["vertices_in_graph"] == pytest.approx(4 / 5) and m["n_vertices"] == 5
    assert m["points_citing"] == pytest.approx(2 / 3) and m["n_points"] == 3
    assert {"answer_recall@5", "vertices_in_graph", "points_citing"} <= set(report.columns(
        report.score_runs([run], "musique", graph=str(graph))))


def test_answer_recall_counts_only_the_first_5_passages_and_failures_as_0(tmp_path):
    from memgraft.eval.scoring import answer_chunk_ids, score_musique

    doc_of = {f"c{i}": f"D{i}" for i in range(1, 8)}
    traces = {"q1": {"answer": {"chunk_ids": ["c1", "c2", "c3", "c4", "c5", "c6"]}},  # gold D6 is the 6th
              "q2": {"shown": {"chunk_ids": ["c7", "c7", "c1"]}}}  # a baseline's shown chunks; c7 twice: 1 passage
    rows = [{"id": "q1", "answer": "x", "supporting_doc_ids": ["D1", "D6"]},
            {"id": "q2", "answer": "x", "supporting_doc_ids": ["D7"]},
            {"id": "q3", "answer": None, "error": "boom", "supporting_doc_ids": ["D1"]}]
    metrics, per_q = score_musique(rows, None, doc_of, trace_of=lambda r: traces.get(r["id"]))
    assert [q["answer_recall@5"] for q in per_q] == [0.5, 1.0, 0.0]
    assert metrics["answer_recall@5"] == pytest.approx(1.5 / 3) and "vertices_in_graph" not in metrics
    assert answer_chunk_ids(None) is None and answer_chunk_ids({"retrieved": {"chunk_ids": ["c1"]}}) is None
