"""HiCoMER end to end: the Python API and CLI over a bank, and the methods x metrics harness."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memgraft.collab.api import CollabMemory
from memgraft.collab.bank import MemoryBank
from memgraft.collab.data.generator import generate
from memgraft.collab.data.generator import QUESTION_TYPES
from memgraft.collab.evaluate.harness import LLM_METHODS, METHODS, EvalOptions, run_eval
from memgraft.models.reranker import CosineReranker
from tests.doubles import ScriptedLLM

GROUPS = [
    {"team": "lab", "group_id": "g0", "time": "2025-01-06T09:00:00", "memories": [
        {"memory_id": "m1", "type": "team", "author": "ana", "content": "Protocol: every member uses qPCR as the primary assay."},
        {"memory_id": "m2", "type": "individual", "author": "bo", "content": "Log: restocked the pipette tips."}]},
    {"team": "lab", "group_id": "g1", "time": "2025-01-08T09:00:00", "memories": [
        {"memory_id": "m3", "type": "team", "author": "ana", "content": "Protocol change: the primary assay is now Western blot instead of qPCR."},
        {"memory_id": "m4", "type": "individual", "author": "bo", "content": "Observation: ran qPCR as the primary assay today."}]},
]


def echo_answer(request) -> str:
    """Answers with the first evidence line's text, so the test sees what the model was shown."""
    prompt = request.messages[-1]["content"]
    line = next((l for l in prompt.splitlines() if l.startswith("1. ")), "none")
    return json.dumps({"answer": line[:200]})


def test_api_adds_groups_searches_as_of_and_answers_from_surviving_evidence(tmp_path, settings, embedder):
    memory = CollabMemory.open(tmp_path / "bank.sqlite", settings, embedder=embedder, llm=ScriptedLLM(echo_answer),
                               policy="rules")
    try:
        for g in GROUPS:
            memory.add_group(g)
        now = {m.memory_id: m for m in memory.memories("lab")}
        assert not now["m1"].valid and now["m1"].original != now["m1"].maintained  # the new protocol outdated it
        assert now["m3"].valid
        before = {m.memory_id: m for m in memory.memories("lab", as_of="2025-01-07T00:00:00")}
        assert set(before) == {"m1", "m2"} and before["m1"].valid and before["m1"].maintained == before["m1"].original
        hits = memory.search("lab", "What is the primary assay?", k=4)
        assert {h.memory.memory_id for h in hits} == {"m1", "m2", "m3", "m4"}
        assert hits[0].memory.memory_id == "m3"  # the current protocol outranks the memories it outdated
        assert not any("Western blot" in m.maintained for m in (now["m1"], now["m4"]))  # named by id, not pasted
        result = memory.answer("lab", "What is the primary assay?")
        # only m3 says "Western blot", and the echo model repeats the first evidence line
        assert result.evidence[0].memory_id == "m3" and "Western blot" in result.answer
        assert "cosine" in result.reranker
        beaten = {d[0].memory_id: d[1].memory_id for d in result.dropped}
        assert beaten.get("m1") == "m3"  # the outdated protocol contradicts the current one and loses to it
        assert "m3" not in beaten and {m.memory_id for m in result.evidence}.isdisjoint(beaten)
    finally:
        memory.close()


def test_cli_add_group_search_memories_history(tmp_path):
    from memgraft.collab.__main__ import app

    bank = str(tmp_path / "cli.sqlite")
    runner = CliRunner()
    for i, g in enumerate(GROUPS):
        path = tmp_path / f"g{i}.json"
        path.write_text(json.dumps(g))
        res = runner.invoke(app, ["add-group", "--bank", bank, "--group", str(path), "--policy", "rules"])
        assert res.exit_code == 0, res.output
    assert "contradiction" in res.output and "revise" in res.output
    res = runner.invoke(app, ["search", "--bank", bank, "--team", "lab", "--query", "primary assay", "--k", "3"])
    assert res.exit_code == 0, res.output
    assert "S_sem: cosine" in res.output and "S_final" in res.output
    res = runner.invoke(app, ["memories", "--bank", bank, "--team", "lab", "--as-of", "2025-01-07T00:00:00"])
    assert res.exit_code == 0 and "m1" in res.output and "m3" not in res.output
    res = runner.invoke(app, ["history", "--bank", bank, "--team", "lab", "--memory", "m1"])
    assert res.exit_code == 0 and "rules" in res.output and "Outdated" in res.output
    res = runner.invoke(app, ["add-group", "--bank", bank, "--group", str(tmp_path / "g0.json"), "--policy", "rules"])
    assert res.exit_code == 0 and "already applied" in res.output  # idempotent, and says so
    res = runner.invoke(app, ["search", "--bank", bank, "--team", "lab", "--query", "x", "--as-of", "yesterday"])
    assert res.exit_code == 2 and "error" in res.output


def test_methods_by_metrics_on_generated_data(tmp_path, settings, embedder):
    data = generate(seed=2, teams=4, groups=8)
    options = EvalOptions(updater="rules", answers=40, seed=0)
    report = run_eval(data, settings, tmp_path, options, embedder=embedder, reranker=CosineReranker(embedder),
                      llm=ScriptedLLM(echo_answer))
    assert set(report.methods) == set(METHODS) - set(LLM_METHODS)  # the LLM-driven peers only when named
    assert report.updaters["rules"]["conflict_f1"] > 0.8
    dense, hicomer = report.methods["dense"], report.methods["hicomer"]
    assert dense["questions"] == hicomer["questions"] > 0
    assert hicomer["orr@5"] < dense["orr@5"]  # the point of the method: fewer outdated memories retrieved
    # the module ablations: without the updater or the validity-aware retriever, outdated memories come back;
    # without the answer step's resolution the ranking is the same and nothing is dropped
    m = report.methods
    assert m["hicomer-no-updater"]["orr@5"] > hicomer["orr@5"] and m["hicomer-no-retriever"]["orr@5"] > hicomer["orr@5"]
    assert m["hicomer-no-resolution"]["orr@5"] == hicomer["orr@5"] and m["hicomer-no-resolution"]["dropped/q"] == 0
    assert hicomer["n_rouge_l"] == min(40, hicomer["questions"]) and 0.0 <= hicomer["rouge_l"] <= 1.0
    # every metric per query type; Decision F1 only on the decision-oriented types
    from memgraft.collab.evaluate.methods import DECISION_TYPES

    by = hicomer["by_qtype"]
    assert set(by) <= set(QUESTION_TYPES) and sum(v["questions"] for v in by.values()) == hicomer["questions"]
    scored = [r for r in report.questions if r["method"] == "hicomer" and "rouge_l" in r]
    assert all(("decision_f1" in r) == (r["qtype"] in DECISION_TYPES) for r in scored)
    assert hicomer["n_decision_f1"] == sum(r["qtype"] in DECISION_TYPES for r in scored) > 0
    assert report.scorer_training["rules"]["last_loss"] < report.scorer_training["rules"]["first_loss"]
    with MemoryBank(tmp_path / "bank-raw.sqlite") as raw:  # the baselines' bank holds no decision
        assert all(not raw.decisions(t) for t in raw.teams())
    with pytest.raises(ValueError, match="unknown methods"):
        run_eval(data, settings, tmp_path, EvalOptions(methods=("nope",)), embedder=embedder,
                 reranker=CosineReranker(embedder))
