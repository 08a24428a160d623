"""The HGMem driver on the bundled SmolLM2, not a script: ``run_answers(llm=None)`` starts the shared
``LLMEngine`` actor, which loads the real model; two question workers run HGMem's loop over a real graph,
and one of them is killed mid-run. Every question is answered once: nothing lost, nothing twice.

Small limits keep it under a minute on 2 cores: two questions, one on each worker, one round (t = 0: retrieve,
insert, answer), short budgets. What is tested is the driver, its shared engine and the kill; HGMem's later rounds
(sufficiency, subqueries, update, merge) on the real model are tests/test_hgmem_real.py's.
"""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from tests.waiting import wait_until

pytestmark = pytest.mark.slow

QUESTIONS = ["Who publishes the Journal of Psychotherapy Integration?", "Who developed person-centered therapy?"]


def _worker_pids():
    """Ray names an actor's process after its class ("ray::QuestionWorker")."""
    import psutil

    pids = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if cmd.startswith("ray::QuestionWorker"):
            pids.append(proc.pid)
    return sorted(pids)


def test_the_driver_runs_hgmem_on_smollm2_through_a_killed_worker(slice_graph, settings, tmp_path):
    from pipelines.answer_queries import run_answers

    s = settings.model_copy(deep=True)
    s.hgmem.max_step = 0
    s.hgmem.max_in_flight = 2
    s.hgmem.top_entities, s.hgmem.top_chunks = 4, 2
    s.hgmem.answer_context_tokens = s.hgmem.evidence_tokens = 300
    # at 96, SmolLM2 (sampling at 0.8) had an insert cut at the limit three times in a row in one of three CI runs
    # once the noun-chunk filter was the default: a StructuredOutputError, which is not what this test is about
    s.generation.max_new_tokens = 160
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    out = tmp_path / "run"
    result: dict = {}
    driver = threading.Thread(target=lambda: result.update(
        run_answers(s, str(slice_graph[0]), str(questions), str(out), "hgmem", workers=2)), daemon=True)
    driver.start()
    # both workers up, each given its question at once: kill one before any question is answered
    wait_until(lambda: len(_worker_pids()) == 2 or not driver.is_alive(), "two question workers", deadline_s=300)
    assert driver.is_alive() and not (out / "traces").exists(), result
    os.kill(_worker_pids()[0], signal.SIGKILL)
    driver.join(timeout=900)
    assert not driver.is_alive() and result, "the driver did not finish"
    rows = [json.loads(x) for x in (out / "answers.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["q0", "q1"]  # each once
    assert result["answered"] == 2 and result["failed"] == 0 and not [r for r in rows if r["error"]], rows
    for row in rows:
        assert row["method"] == "hgmem" and row["answer"].strip() and row["llm_calls"] >= 2
        assert row["prompt_tokens"] > 100 and row["completion_tokens"] > 0
        trace = json.loads(open(row["trace"]).read())
        assert trace["steps"] and trace["steps"][0]["subqueries"][0]["entity_ids"]
