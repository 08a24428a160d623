"""The HGMem paper's tables in one run (pipelines/eval_hgmem.py): methods x graphs, one LLM, scored."""

from __future__ import annotations

import json

import pytest

from tests.doubles import HGMemScript, ScriptedLLM

pytestmark = pytest.mark.slow


def test_methods_on_the_full_and_the_degraded_graph_with_one_llm(slice_graph, settings, ray_local, tmp_path):
    from pipelines.eval_hgmem import print_tables, run_tables

    questions = tmp_path / "q.jsonl"
    gold = {"supporting_doc_ids": ["Journal of Psychotherapy Integration", "Adolescence"]}
    questions.write_text("".join(json.dumps({"id": f"2hop__{i}", "question": q, "answers": ["APA"], **gold}) + "\n"
                                 for i, q in enumerate(["Who publishes the Journal of Psychotherapy Integration?",
                                                        "What is adolescence?"])))
    s = settings.model_copy(update={"hgmem": settings.hgmem.model_copy(update={"max_in_flight": 2, "top_entities": 6})})
    out = tmp_path / "out"
    # t = 0 and t = 1 in one run, each a row, on the full and the degraded graph, beside the retrievers' recall@5
    tables = run_tables(s, str(slice_graph[0]), str(questions), str(out), methods=("hgmem",), max_steps=[0, 1],
                        llm=ScriptedLLM(HGMemScript()))
    assert list(tables) == ["full", "50% dropped"]
    for name, result in tables.items():
        rows = result["methods"]
        assert list(rows) == ["hgmem t=0", "hgmem t=1", "dense top-5 (no LLM)", "graph top-5 (no LLM)"]
        assert rows["hgmem t=0"]["steps/q"] == 1 and rows["hgmem t=1"]["steps/q"] == 2
        hgmem = rows["hgmem t=1"]
        assert hgmem["questions"] == 2 and hgmem["failures"] == 0
        assert hgmem["hyperedge_size"] >= 2  # Table 3
        assert "recall" in hgmem and "em" in hgmem and hgmem["tokens/q"] > 0 and hgmem["seconds/q"] > 0  # Table 7
        for t in ("hgmem t=0", "hgmem t=1"):  # grounded by construction
            assert rows[t]["vertices_in_graph"] == 1.0 and rows[t]["points_citing"] == 1.0 and rows[t]["n_points"] > 0
            assert 0 <= rows[t]["answer_recall@5"] <= 1 and rows[t]["n_answer_recall@5"] == 2
    dense = tables["full"]["methods"]["dense top-5 (no LLM)"]
    assert dense["n_answer_recall@5"] == 2 and dense["answer_recall@5"] > 0
    degraded = json.loads((out / "graphs" / "drop-0.5-seed-0" / "manifest.json").read_text())
    assert degraded["degraded"]["drop"] == 0.5
    assert json.loads((out / "tables.json").read_text()).keys() == tables.keys()
    print_tables(tables, out / "tables.txt")
    assert "answer_recall@5" in (out / "tables.txt").read_text()
    # scored again as they are (no LLM), on the questions every run answered: one question a row
    one = out / "runs" / "full" / "hgmem-t1" / "answers.jsonl"
    one.write_text(one.read_text().splitlines()[0] + "\n")
    again = run_tables(s, str(slice_graph[0]), str(questions), str(out), methods=("hgmem",), drop=0,
                       max_steps=[0, 1], score_only=True, common=True)["full"]["methods"]
    assert all(again[r]["questions"] == 1 for r in again)
    with pytest.raises(ValueError, match="unknown methods"):
        run_tables(s, str(slice_graph[0]), str(questions), str(tmp_path / "x"), methods=("hgmem-fast",))
