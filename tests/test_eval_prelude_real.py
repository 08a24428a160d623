"""PRELUDE end to end on the bundled models: the fixture's book becomes a graph, its prequels become
questions (``python -m memgraft.eval questions --dataset prelude``), the driver answers two of them on
SmolLM2, and ``score`` has the same model judge the verdicts. Whether the 135M model is right is not
the point: every prequel must come back scored, none lost to a judge or driver failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "prelude"


def test_prelude_prequels_answered_and_scored_on_smollm2(ray_local, settings, tmp_path):
    from memgraft.eval.__main__ import app
    from pipelines.answer_queries import run_answers
    from pipelines.build_graphs import run_build

    graph = tmp_path / "graph"
    report = run_build(settings, str(FIXTURE / "books"), str(graph))
    assert report.processed_docs == 1 and report.counts["chunks"] >= 3 and not report.rejected
    questions = tmp_path / "q.jsonl"
    res = CliRunner().invoke(app, ["questions", "--dataset", "prelude", "--input", str(FIXTURE / "public.jsonl"),
                                   "--output", str(questions), "--limit", "2"])
    assert res.exit_code == 0 and "wrote 2 prelude questions" in res.output, res.output

    s = settings.model_copy(deep=True)
    s.hgmem.max_in_flight = 1
    s.hgmem.top_entities, s.hgmem.top_chunks, s.hgmem.answer_context_tokens = 6, 3, 600
    s.generation.max_new_tokens = 96
    summary = run_answers(s, str(graph), str(questions), str(tmp_path / "run"), "naive", workers=1)
    assert summary["answered"] == 2

    out = tmp_path / "scores.json"
    res = CliRunner().invoke(app, ["score", "--run", str(tmp_path / "run"), "--dataset", "prelude",
                                   "--judge-profile", "local", "--judge-max-tokens", "160", "--output", str(out)])
    assert res.exit_code == 0, res.output
    scored = json.loads(out.read_text())
    naive = scored["methods"]["naive"]
    assert naive["questions"] == 2 and naive["failures"] == 0
    assert naive["n_accuracy"] + naive["judge_failures"] == 2 and 0.0 <= (naive["accuracy"] or 0.0) <= 1.0
    assert {q["id"] for q in scored["questions"]} == {"salt-001", "salt-002"}
    assert all(q["verdict_from"] in ("parsed", "llm") for q in scored["questions"])
