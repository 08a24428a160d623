"""The HGMem driver on a local Ray: answers as they finish, resume after a kill, failures recorded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import cloudpickle
import pytest

import tests.doubles
from tests.conftest import REPO
from tests.doubles import HGMemScript, ScriptedLLM
from tests.waiting import DEADLINE_S, gate, pass_gate, wait_until

pytestmark = pytest.mark.slow

QUESTIONS = [
    "Who published the Journal of Psychotherapy Integration?",
    "What is adolescence?",
    "Who developed person-centered therapy?",
    "What does the word psychology derive from?",
    "Where did Judith Viorst study?",
    "What is a peer-reviewed journal?",
]


@pytest.fixture()
def questions(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": q, "answer": "gold"}) + "\n"
                            for i, q in enumerate(QUESTIONS)))
    return path


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_driver_answers_every_question_once(slice_graph, settings, questions, tmp_path):
    from pipelines.answer_queries import run_answers

    cloudpickle.register_pickle_by_value(tests.doubles)
    llm = ScriptedLLM(HGMemScript(fail_on="Judith Viorst"))
    s = settings.model_copy(deep=True)
    s.hgmem.max_in_flight = 3
    s.hgmem.max_step = 2  # three rounds are enough to see the driver's path (the default's four: test_serving)
    out = tmp_path / "run"
    summary = run_answers(s, str(slice_graph[0]), str(questions), str(out), "hgmem", llm=llm, workers=2)
    rows = _lines(out / "answers.jsonl")
    assert sorted(r["id"] for r in rows) == [f"q{i}" for i in range(6)]
    failed = [r for r in rows if r["error"]]
    assert [r["id"] for r in failed] == ["q4"] and "StructuredOutputError" in failed[0]["error"]
    assert summary["answered"] == 5 and summary["failed"] == 1
    ok = next(r for r in rows if r["id"] == "q0")
    # an evolve at t = 0, then sufficiency, evolve and merge at t = 1, 2, then the answer
    assert ok["answer"] == "scripted answer" and ok["answer"] and ok["steps"] == 3 and ok["method"] == "hgmem"
    assert ok["prompt_tokens"] > 0 and ok["llm_calls"] == 8 and ok["question"] == QUESTIONS[0]
    assert ok["gold_answer"] == "gold"  # the reference answer passes through beside the model's
    trace = json.loads(open(ok["trace"]).read())
    assert len(trace["steps"]) == 3 and trace["final_memory"]

    # Rerun: nothing new to do; --retry-failed reruns only the failed one, replacing its line.
    again = run_answers(s, str(slice_graph[0]), str(questions), str(out), "hgmem", llm=llm)
    assert again["skipped"] == 6 and again["answered"] == 0 and again["workers"] == 0  # none started for nothing
    retry = run_answers(s, str(slice_graph[0]), str(questions), str(out), "hgmem", retry_failed=True,
                        llm=ScriptedLLM(HGMemScript()))
    assert retry["answered"] == 1
    rows = _lines(out / "answers.jsonl")
    assert len(rows) == 6 and not [r for r in rows if r["error"]]


RUNNER = """
import json, os, sys, time
sys.path.insert(0, {repo!r})
import cloudpickle, tests.doubles
from memgraft.config import load_settings
from pipelines.answer_queries import run_answers
from tests.doubles import HGMemScript, ScriptedLLM
cloudpickle.register_pickle_by_value(tests.doubles)
HOLD, FIRST = sys.argv[4], {first!r}

class Held(HGMemScript):
    \"\"\"While the HOLD file exists, every question but the first two waits: the driver is killed there.\"\"\"
    def __call__(self, request):
        while os.path.exists(HOLD) and not any(q in request.messages[-1]["content"] for q in FIRST):
            time.sleep(0.05)
        return super().__call__(request)

s = load_settings("local", ["hgmem.max_in_flight=1"])
print(json.dumps(run_answers(s, sys.argv[1], sys.argv[2], sys.argv[3], "hgmem", llm=ScriptedLLM(Held()))))
"""


def test_killed_driver_resumes_without_duplicates(ray_local, slice_graph, settings, questions, tmp_path):
    """The driver, submitted to a running cluster (RAY_ADDRESS, as ray job submit runs it), killed mid-run;
    a new driver on the same cluster resumes."""
    import os

    from pipelines.answer_queries import run_answers

    script = tmp_path / "runner.py"
    script.write_text(RUNNER.format(repo=str(REPO), first=QUESTIONS[:2]))
    out, hold = tmp_path / "run", tmp_path / "hold"
    hold.touch()
    args = [sys.executable, str(script), str(slice_graph[0]), str(questions), str(out), str(hold)]
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address}
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env=env)
    answers = out / "answers.jsonl"
    # One question at a time, in order: two answered, the third held until the kill.
    wait_until(lambda: answers.exists() and len(answers.read_text().splitlines()) >= 2 or proc.poll() is not None,
               "two answers written", deadline_s=300)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    hold.unlink()
    done_before = len(answers.read_text().splitlines())
    assert done_before == 2
    with answers.open("a") as f:  # as if killed in the middle of writing a line
        f.write('{"id": "q5", "answ')
    cloudpickle.register_pickle_by_value(tests.doubles)
    s = settings.model_copy(update={"hgmem": settings.hgmem.model_copy(update={"max_in_flight": 1})})
    summary = run_answers(s, str(slice_graph[0]), str(questions), str(out), "hgmem", llm=ScriptedLLM(HGMemScript()))
    assert summary["skipped"] == done_before and summary["answered"] == len(QUESTIONS) - done_before
    ids = [r["id"] for r in _lines(answers)]
    assert sorted(ids) == sorted(f"q{i}" for i in range(len(QUESTIONS)))  # each exactly once


def test_auto_workers_caps_questions_per_worker(settings):
    from pipelines.answer_queries import auto_workers

    def s(in_flight: int, per_worker: int):
        return settings.model_copy(update={"hgmem": settings.hgmem.model_copy(
            update={"max_in_flight": in_flight, "questions_per_worker": per_worker})})

    assert auto_workers(s(8, 64)) == 1
    assert auto_workers(s(256, 64)) == 4
    assert auto_workers(s(65, 64)) == 2
    assert auto_workers(s(3, 0)) == 3  # a zero cap reads as one question per worker


def test_workers_are_capped_to_the_cpus_that_can_place_them(monkeypatch, settings):
    """A worker that cannot be placed would hold its questions forever: ask for 8 on 2 CPUs, get what fits."""
    import ray

    from pipelines.answer_queries import placeable_workers

    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    s = settings.model_copy(deep=True)
    s.pipeline.actor_cpus = 0.5
    assert placeable_workers(s, 8, engine=False) == 4
    assert placeable_workers(s, 8, engine=True) == 3  # the shared engine's CPUs come first
    assert placeable_workers(s, 2, engine=True) == 2


def test_a_timed_out_engine_call_is_cancelled_before_it_is_decoded(ray_local, settings):
    """The engine decodes one batch at a time; a call that times out while queued is never decoded."""
    import ray

    from memgraft.models.llm.base import ChatRequest, Completion
    from pipelines.engine import EngineClient, LLMEngine

    class HeldLLM:
        """Decodes nothing until the test opens the gate."""

        name = "held"

        def __init__(self, gate):
            self.gate = gate
            self.seen: list[str] = []  # what was decoded (inside the actor; read back below)

        def generate(self, requests):
            self.seen += [r.messages[-1]["content"] for r in requests]
            pass_gate(self.gate)
            return [Completion(text="{}", prompt_tokens=1, completion_tokens=1) for _ in requests]

    s = settings.model_copy(deep=True)
    s.models.llm_batch_size = 8
    held = gate()
    engine = LLMEngine.options(num_cpus=0, max_concurrency=16).remote(s, 5.0, HeldLLM(held))
    patient = EngineClient(engine, "held", timeout_s=DEADLINE_S)
    hasty = EngineClient(engine, "held", timeout_s=0.3)
    first = patient.handle.generate.remote([ChatRequest([{"role": "user", "content": "first"}])])
    wait_until(lambda: ray.get(held.count.remote()) == 1, '"first" is decoding')
    with pytest.raises(TimeoutError, match="cancelled"):  # the engine is held: this call can only time out
        hasty.generate([ChatRequest([{"role": "user", "content": "too late"}])])
    wait_until(lambda: ray.get(engine.__ray_call__.remote(lambda self: all(f.done() for _, f in self.queue._queue))),
               '"too late" cancelled in the queue')
    ray.get(held.open.remote())
    assert ray.get(first)[0].text == "{}"
    assert patient.generate([ChatRequest([{"role": "user", "content": "next"}])])[0].text == "{}"
    decoded = ray.get(engine.__ray_call__.remote(lambda self: self.llm.seen))
    assert decoded == ["first", "next"]  # "too late" was dropped, not decoded
    assert ray.get(engine.stats.remote())["requests"] == 2


def test_a_second_method_in_the_same_folder_answers_every_question(tmp_path):
    """Resume is per method: one folder holds several methods' lines (``score`` groups them by method)."""
    from pipelines.answer_queries import done_ids

    answers = tmp_path / "answers.jsonl"
    rows = [{"id": "a", "method": "hgmem", "error": None}, {"id": "b", "method": "hgmem", "error": "boom"},
            {"id": "a", "method": "naive", "error": "boom"}]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"id": "c", "meth')  # torn last line
    assert done_ids(answers, False, "graph") == set()
    assert done_ids(answers, False, "hgmem") == {"a", "b"} and done_ids(answers, False) == {"a", "b"}
    assert done_ids(answers, True, "naive") == set()  # naive's failure goes; hgmem's lines stay
    assert _lines(answers) == rows[:2]
    assert done_ids(answers, True, "hgmem") == {"a"} and _lines(answers) == rows[:1]
