"""The HGMem paper's tables in one run (pipelines/eval_hgmem.py): methods x graphs, one LLM, scored."""

from __future__ import annotations

import json

import pytest

from tests.doubles import HGMemScript, ScriptedLLM

pytestmark = pytest.mark.slow


def test_methods_on_the_full_and_the_degraded_graph_with_one_llm(slice_graph, settings, ray_local, tmp_path):
    from pipelines.eval_hgmem import run_tables

    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"2hop__{i}", "question": q, "answers": ["APA"]}) + "\n" for i, q in
                                 enumerate(["Who publishes the Journal of Psychotherapy Integration?", "What is adolescence?"])))
    s = settings.model_copy(update={"hgmem": settings.hgmem.model_copy(update={"max_in_flight": 2, "max_step": 1,
                                                                              "top_entities": 6})})
    tables = run_tables(s, str(slice_graph[0]), str(questions), str(tmp_path / "out"), methods=("hgmem",),
                        llm=ScriptedLLM(HGMemScript()))
    assert list(tables) == ["full", "50% dropped"]
    for name, result in tables.items():
        hgmem = result["methods"]["hgmem"]
        assert hgmem["questions"] == 2 and hgmem["failures"] == 0 and hgmem["steps/q"] == 2
        assert hgmem["hyperedge_size"] >= 2  # Table 3
        assert "recall" in hgmem and "em" in hgmem and hgmem["tokens/q"] > 0 and hgmem["seconds/q"] > 0  # Table 7
    degraded = json.loads((tmp_path / "out" / "graphs" / "drop-0.5-seed-0" / "manifest.json").read_text())
    assert degraded["degraded"]["drop"] == 0.5
    assert json.loads((tmp_path / "out" / "tables.json").read_text()).keys() == tables.keys()
    with pytest.raises(ValueError, match="unknown methods"):
        run_tables(s, str(slice_graph[0]), str(questions), str(tmp_path / "x"), methods=("hgmem-fast",))
