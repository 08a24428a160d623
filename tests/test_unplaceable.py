"""A run whose actors ask for what Ray does not have is refused at once, never left waiting: Ray waits
forever for an actor it cannot place (each command below hung before this check).
vLLM engines need GPUs; a Ray Train worker group needs all its CPUs (and GPUs) at once."""

import json
import logging
import os
import subprocess
import sys

import pytest

from pipelines.runtime import PipelineFitError, gpu_actors
from tests.conftest import REPO


def test_actors_are_capped_at_what_the_gpus_hold():
    assert gpu_actors("w", 0, 4, started=True, have=0) == 4  # no GPU asked: nothing to check
    assert gpu_actors("w", 1, 4, started=True, have=8) == 4
    assert gpu_actors("w", 2, 4, started=True, have=5) == 2  # tensor parallel 2 on 5 GPUs: two engines
    assert gpu_actors("w", 1, 3, started=False, have=1) == 1


def test_no_gpu_for_even_one_is_refused_on_a_local_ray_and_said_on_a_cluster(caplog):
    with pytest.raises(PipelineFitError, match=r"w asks for 2 GPU\(s\) per actor .* Ray has 1: it could never start"):
        gpu_actors("w", 2, 1, started=True, have=1)
    with caplog.at_level(logging.WARNING, logger="memgraft.runtime"):
        assert gpu_actors("w", 1, 3, started=False, have=0) == 1  # a cluster may still grow: keep one
    assert "unless the cluster grows" in caplog.text


def test_training_workers_must_all_fit():
    from memgraft.config import load_settings
    from training.common import worker_fit_problem

    t = load_settings("local").training  # one CPU worker of 2 CPUs
    assert worker_fit_problem(t, {"CPU": 2.0}) is None
    three = t.model_copy(update={"num_workers": 3})
    assert "training.num_workers=3 at training.cpus_per_worker=2 ask for 6 CPU (Ray has 2)" in worker_fit_problem(
        three, {"CPU": 2.0})
    gpu = t.model_copy(update={"use_gpu": True, "gpus_per_worker": 1.0})
    assert "ask for 1 GPU (Ray has 0)" in worker_fit_problem(gpu, {"CPU": 8.0})
    assert "training.use_gpu=false" in worker_fit_problem(gpu, {"CPU": 8.0})
    assert worker_fit_problem(gpu, {"CPU": 8.0, "GPU": 1.0}) is None


def start(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, script if "/" in script else f"pipelines/{script}", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "RAY_ADDRESS": "local"})


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def command(script: str, *args: str) -> subprocess.CompletedProcess:
    return finish(start(script, *args))


VLLM = ("--set", "models.llm_backend=vllm", "--set", "models.llm_tensor_parallel=64")  # more GPUs than any machine here


@pytest.mark.slow
def test_each_command_refuses_vllm_on_a_ray_without_gpus_and_writes_nothing(tmp_path, slice_graph):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Ada Lovelace worked with Charles Babbage in London.")
    stream = tmp_path / "s.jsonl"
    stream.write_text(json.dumps({"team": "a", "group_id": "g1", "time": "2025-01-01T09:00:00", "memories": [
        {"memory_id": "m0", "type": "team", "author": "a", "content": "We ship on Friday."}]}) + "\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "Who worked with Babbage?"}) + "\n")
    # the three commands at once, each on its own local Ray (their start-up is most of the time)
    running = [start("build_graphs.py", "--input", str(docs), "--output", str(tmp_path / "g"),
                     "--set", "extraction.method=llm", *VLLM),
               start("ingest_memories.py", "--stream", str(stream), "--bank", str(tmp_path / "b.sqlite"),
                     "--policy", "llm", *VLLM),
               start("answer_queries.py", "--graph", str(slice_graph[0]), "--questions", str(questions),
                     "--output", str(tmp_path / "out"), *VLLM)]
    build, ingest, answer = (finish(p) for p in running)

    assert build.returncode == 2, build.stderr[-2000:]
    assert "build_graphs: LLM extraction (Ray Data's vLLM processor) asks for 64 GPU(s)" in build.stderr
    assert not (tmp_path / "g" / "manifest.json").exists()

    assert ingest.returncode == 2, ingest.stderr[-2000:]
    assert "ingest_memories: an ingest worker (the LLM updater) asks for 64 GPU(s)" in ingest.stderr
    assert not (tmp_path / "b.sqlite").exists()

    assert answer.returncode == 2, answer.stderr[-2000:]
    assert "answer_queries: the shared LLM engine asks for 64 GPU(s)" in answer.stderr
    assert "could never start" in answer.stderr and not (tmp_path / "out" / "answers.jsonl").exists()


@pytest.mark.slow
def test_a_training_run_whose_workers_cannot_all_start_is_refused(tmp_path):
    proc = command("training/validity_scorer.py", "--output", str(tmp_path / "vs"), "--set", "training.num_workers=1000")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "validity_scorer: training.num_workers=1000 at training.cpus_per_worker=2 ask for 2000 CPU" in proc.stderr
    assert not (tmp_path / "vs" / "ray").exists()  # no run was started, so none is left to resume
