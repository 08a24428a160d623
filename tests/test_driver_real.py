"""The HGMem driver on the bundled SmolLM2, not a script: ``run_answers(llm=None)`` starts the shared
``LLMEngine`` actor, which loads the real model, and one question comes back as a real answer line.

Small limits keep it to a minute or so on 2 cores: one question, no evolution step
(the initial retrieval, memory and the answer), a short token budget.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_the_driver_answers_one_question_on_smollm2(slice_graph, settings, tmp_path):
    from pipelines.answer_queries import run_answers

    s = settings.model_copy(deep=True)
    s.hgmem.max_in_flight = 1
    s.hgmem.top_entities, s.hgmem.top_chunks, s.hgmem.answer_context_tokens = 6, 2, 400
    s.generation.max_new_tokens = 160
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q0", "question": "Who publishes the Journal of Psychotherapy "
                                                             "Integration?"}) + "\n")
    # naive: one LLM call, the driver's path is the same for every method (HGMem's loop on SmolLM2 itself:
    # tests/test_hgmem_real.py)
    summary = run_answers(s, str(slice_graph[0]), str(questions), str(tmp_path / "run"), "naive", workers=1)
    [row] = [json.loads(x) for x in (tmp_path / "run" / "answers.jsonl").read_text().splitlines()]
    assert summary["answered"] == 1 and not row["error"], row
    assert row["answer"].strip() and row["method"] == "naive" and row["id"] == "q0"
    assert row["llm_calls"] >= 1 and row["prompt_tokens"] > 100 and row["completion_tokens"] > 0
