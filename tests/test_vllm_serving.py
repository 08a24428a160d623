"""The cluster LLM path of the application against a real ``ray.serve.llm`` LLMServer (vllm-cpu, SmolLM2).

Runs only in the vLLM environment, by hand (the vLLM environment has no
sentence-transformers, so only the LLM side of the application is here):

    .venv-vllm/bin/python -m pytest -q -m vllm tests/test_serving_vllm.py

The LLMServer is what ``serving.vllm.build_llm`` builds for ``models.llm_backend:
vllm`` (on CPU: one CPU bundle instead of GPUs); a probe deployment drives it the
ways the ingress does: the library's requests through ``ServeLLMProxy`` (a JSON
schema decoded under constraint, a batch in flight together) and the client's
OpenAI body through ``forward_chat``, streaming included.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB

SCHEMA = {"title": "Answer", "type": "object", "properties": {"answer": {"type": "string", "maxLength": 40}},
          "required": ["answer"]}


def test_proxy_and_chat_forwarding_on_a_real_llm_server():
    import ray
    from ray import serve

    from memgraft.models.llm.base import ChatRequest
    from serving.settings import load_profile
    from serving.vllm import ServeLLMProxy, build_llm, forward_chat

    settings, serving = load_profile("local", [
        "models.llm_backend=vllm", "generation.max_new_tokens=48",
        "serving.vllm_engine_kwargs={max_model_len: 2048, enforce_eager: true}",
        "serving.vllm_placement_group={bundles: [{CPU: 1}]}"])

    @serve.deployment(ray_actor_options={"num_cpus": 0})
    class Probe:
        def __init__(self, llm):
            self.llm = llm

        async def run(self) -> dict:
            proxy = ServeLLMProxy(self.llm, settings, 600)
            outs = await asyncio.to_thread(proxy.generate, [
                ChatRequest([{"role": "user", "content": "What is the capital of France? Reply as JSON."}],
                            json_schema=SCHEMA),
                ChatRequest([{"role": "user", "content": "Say hello."}], max_new_tokens=8)])
            body = {"model": proxy.name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
            plain = await forward_chat(self.llm, body)
            streamed = await forward_chat(self.llm, {**body, "stream": True})
            chunks = [c if isinstance(c, str) else c.decode() async for c in streamed.body_iterator]
            return {"outs": [o.__dict__ for o in outs], "plain": json.loads(plain.body), "stream": "".join(chunks)}

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        handle = serve.run(Probe.bind(build_llm(settings, serving)), name="vllm-probe", route_prefix=None)
        got = handle.run.remote().result(timeout_s=600)
    finally:
        serve.shutdown()
        ray.shutdown()
    structured, short = got["outs"]
    assert json.loads(structured["text"])["answer"] and structured["prompt_tokens"] > 0
    assert short["completion_tokens"] <= 8 and short["finish_reason"] in ("stop", "length")
    assert got["plain"]["object"] == "chat.completion" and got["plain"]["choices"][0]["message"]["content"]
    assert got["stream"].startswith("data: ") and got["stream"].rstrip().endswith("data: [DONE]")
