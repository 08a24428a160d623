"""A run whose vLLM actors need GPUs that Ray does not have is refused at once, never left waiting:
Ray waits forever for an actor it cannot place (each command hung before this check)."""

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


def command(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, f"pipelines/{script}", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "RAY_ADDRESS": "local"})


VLLM = ("--set", "models.llm_backend=vllm")


@pytest.mark.slow
def test_each_command_refuses_vllm_on_a_ray_without_gpus_and_writes_nothing(tmp_path, slice_graph):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Ada Lovelace worked with Charles Babbage in London.")
    build = command("build_graphs.py", "--input", str(docs), "--output", str(tmp_path / "g"),
                    "--set", "extraction.method=llm", *VLLM)
    assert build.returncode == 2, build.stderr[-2000:]
    assert "build_graphs: LLM extraction (Ray Data's vLLM processor) asks for 1 GPU(s)" in build.stderr
    assert not (tmp_path / "g" / "manifest.json").exists()

    stream = tmp_path / "s.jsonl"
    stream.write_text(json.dumps({"team": "a", "group_id": "g1", "time": "2025-01-01T09:00:00", "memories": [
        {"memory_id": "m0", "type": "team", "author": "a", "content": "We ship on Friday."}]}) + "\n")
    ingest = command("ingest_memories.py", "--stream", str(stream), "--bank", str(tmp_path / "b.sqlite"),
                     "--policy", "llm", *VLLM)
    assert ingest.returncode == 2, ingest.stderr[-2000:]
    assert "ingest_memories: an ingest worker (the LLM updater) asks for 1 GPU(s)" in ingest.stderr
    assert not (tmp_path / "b.sqlite").exists()

    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "Who worked with Babbage?"}) + "\n")
    answer = command("answer_queries.py", "--graph", str(slice_graph[0]), "--questions", str(questions),
                     "--output", str(tmp_path / "out"), *VLLM)
    assert answer.returncode == 2, answer.stderr[-2000:]
    assert "answer_queries: the shared LLM engine asks for 1 GPU(s)" in answer.stderr
    assert "could never start" in answer.stderr and not (tmp_path / "out" / "answers.jsonl").exists()
