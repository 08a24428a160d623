"""vLLM on the bundled SmolLM2: the in-process engine and the Ray Data LLM processor.

Runs only in the vLLM environment (``make test-vllm``, vllm-cpu on CPU). vLLM
0.32 reads no GGUF files, so both load the folder the transformers backend
converts once from the GGUF (``ensure_hf_folder``).
"""

from __future__ import annotations

import gc
import os

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the default reserves far more than a 135M model needs

from memgraft.config import Settings  # noqa: E402
from memgraft.graph.llm_extractor import build_messages, extraction_model  # noqa: E402
from memgraft.models.llm.base import ChatRequest, generate_structured  # noqa: E402

# Small, fast engines: short context, no graph compilation on 2 cores.
ENGINE_KWARGS = {"max_model_len": 2048, "enforce_eager": True}
# Bounds that make even a repeating 135M model close its JSON within the budget.
BOUNDED = extraction_model(max_entities=2, max_relations=1, max_name_chars=40, max_description_chars=60)
TEXTS = [
    "Marie Curie was a physicist who worked in Paris at the University of Paris.",
    "The Treaty of Versailles was signed in 1919 by Germany and France.",
]


class TestEngine:
    @pytest.fixture(scope="class")
    def engine(self):
        from memgraft.models.llm.vllm_backend import VLLMEngine

        engine = VLLMEngine.from_settings(Settings(), **ENGINE_KWARGS)
        yield engine
        engine.close()
        del engine
        gc.collect()

    def test_schema_valid_extraction(self, engine) -> None:
        assert engine.name == "SmolLM2-135M-Instruct"
        results = generate_structured(
            engine, [build_messages(t) for t in TEXTS], BOUNDED, retries=1, max_new_tokens=200, temperature=0.0,
        )
        for res in results:
            assert res.ok, res.errors
            assert res.value.entities
            assert res.prompt_tokens > 100 and 0 < res.completion_tokens <= 400

    def test_length_limit_and_token_counts(self, engine) -> None:
        ask = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]
        out, again = engine.generate([ChatRequest(ask, max_new_tokens=5, temperature=0.0)] * 2)
        assert out.finish_reason == "length" and out.completion_tokens == 5
        assert out.text == again.text
        tok = engine.llm.get_tokenizer()
        prompt = tok.apply_chat_template(ask, tokenize=False, add_generation_prompt=True)
        assert out.prompt_tokens == len(tok(prompt, add_special_tokens=False)["input_ids"])


def test_ray_data_llm_processor_gives_extract_batch_columns() -> None:
    import ray

    from pipelines.llm_extract_processor import build_llm_extract_processor

    settings = Settings()
    settings.generation.temperature = 0.0
    settings.extraction.llm_max_new_tokens = 200
    ray.init(num_cpus=4, include_dashboard=False, ignore_reinit_error=True)
    try:
        processor = build_llm_extract_processor(
            settings, batch_size=2, engine_kwargs=ENGINE_KWARGS,
            placement_group_config={"bundles": [{"CPU": 1}]}, output_model=BOUNDED,
        )
        rows = [{"chunk_id": f"c{i}", "doc_id": "d", "text": t} for i, t in enumerate(TEXTS)]
        out = sorted(processor(ray.data.from_items(rows)).take_all(), key=lambda r: r["chunk_id"])
    finally:
        ray.shutdown()
    assert [r["chunk_id"] for r in out] == ["c0", "c1"]
    for row in out:
        assert set(row) == {"chunk_id", "doc_id", "text", "entities", "relations", "extract_error", "extract_tokens"}
        assert row["extract_error"] == "", row
        assert len(row["entities"]) >= 1 and row["extract_tokens"] > 100
        assert set(row["entities"][0]) == {"name", "type", "description"}
