"""The user-facing command, as a user runs it: `python pipelines/build_graphs.py ...` in its own process."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def run(*args: str, address: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_ADDRESS": address} if address else None
    return subprocess.run([sys.executable, "pipelines/build_graphs.py", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env=env)


def test_build_graphs_command(ray_local, tmp_path):
    """Submitted to a running cluster, as `ray job submit` runs it (RAY_ADDRESS set)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Ada Lovelace worked with Charles Babbage in London on the Analytical Engine.")
    (docs / "b.json").write_text(json.dumps([{"id": "b", "body": "no text here"}]))
    out = tmp_path / "graph"
    proc = run("--input", str(docs), "--output", str(out), "--set", "pipeline.embed_batch_size=16",
               address=ray_local.get_runtime_context().gcs_address)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "graph built" in proc.stdout and "rejected" in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["documents"] == 1 and manifest["settings"]["pipeline"]["embed_batch_size"] == 16
    assert manifest["rejected"][0]["reason"] == "record has no 'text' field"


def test_build_graphs_command_errors():
    proc = run("--output", "/tmp/nowhere")
    assert proc.returncode != 0 and "--input, --delete" in proc.stderr + proc.stdout
    proc = run("--input", "/no/such/path", "--output", "/tmp/nowhere")
    assert proc.returncode == 2 and "build_graphs: input /no/such/path does not exist" in proc.stderr


def test_actor_pools_that_leave_no_cpu_are_refused_before_they_start(tmp_path):
    """A local Ray of a fixed size: pools holding every CPU would leave the chunking tasks waiting forever."""
    from memgraft.config import load_settings
    from pipelines.runtime import actor_fit_problem

    p = load_settings("local").pipeline  # 1 extract actor of 0.5 CPU, chunks embedded in the driver
    assert actor_fit_problem(p, 2) is None and actor_fit_problem(p, 0.75) is None
    three = p.model_copy(update={"extract_actors": 3, "embed_chunks_in_driver": False})
    assert "hold 2 of Ray's 2 CPUs" in actor_fit_problem(three, 2) and actor_fit_problem(three, 3) is None
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Ada Lovelace worked with Charles Babbage in London.")
    proc = run("--input", str(docs), "--output", str(tmp_path / "g"), "--set", "pipeline.extract_actors=100000",
               address="local")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "build_graphs: pipeline.extract_actors=100000" in proc.stderr and "could never start" in proc.stderr


def test_answer_queries_says_what_is_missing_before_ray_starts(tmp_path):
    def answer(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "pipelines/answer_queries.py", *args, "--output", str(tmp_path / "o")],
                              cwd=REPO, capture_output=True, text=True, timeout=300)

    proc = answer("--graph", str(tmp_path), "--questions", str(tmp_path / "q.jsonl"))
    assert proc.returncode == 2 and f"answer_queries: questions {tmp_path / 'q.jsonl'} is not a file" in proc.stderr
    (tmp_path / "q.jsonl").write_text('{"id": "q0", "question": "who?"}\n')
    proc = answer("--graph", str(tmp_path), "--questions", str(tmp_path / "q.jsonl"))
    assert proc.returncode == 2 and "holds no manifest.json: not a graph folder" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_quiet_command_silences_transformers_without_importing_it():
    """``configure_output``: transformers' bars and advice off through the environment, which it reads when a
    stage first imports it (here or in a worker of the Ray the command starts), so a command that never needs
    it does not pay its import; one that imported it already is silenced directly."""
    code = ("import sys; from pipelines.runtime import configure_output; configure_output(); "
            "print('transformers' in sys.modules); from transformers.utils import logging as l; "
            "print(l.get_verbosity() == l.ERROR, l.is_progress_bar_enabled())")
    env = {k: v for k, v in os.environ.items() if k not in ("TRANSFORMERS_VERBOSITY", "HF_HUB_DISABLE_PROGRESS_BARS")}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split() == ["False", "True", "False"], out.stderr[-2000:]
    code = ("import transformers.utils.logging as l; from pipelines.runtime import configure_output; "
            "configure_output(); print(l.get_verbosity() == l.ERROR, l.is_progress_bar_enabled())")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split() == ["True", "False"], out.stderr[-2000:]
