from pathlib import Path

import pytest
from pydantic import ValidationError

from memgraft.config import Settings, load_settings


def test_defaults_hold_the_papers_numbers():
    s = Settings()
    assert (s.chunking.size, s.chunking.overlap) == (200, 50)
    h = s.hgmem
    assert (h.top_entities, h.relations_per_entity, h.top_chunks, h.max_chunks_per_step, h.max_step) == (20, 5, 10, 50, 3)
    assert (s.generation.temperature, s.generation.max_new_tokens) == (0.8, 2048)


def test_local_profile_keeps_the_method_and_sizes_prompts_for_a_cpu():
    s = load_settings("local")
    assert (s.chunking.size, s.chunking.overlap, s.hgmem.top_entities, s.hgmem.max_step) == (200, 50, 20, 3)
    assert s.generation.temperature == 0.8
    # SmolLM2 on 2 cores: shorter generations and prompts than the paper's 2,048 / 6,000 tokens
    assert s.generation.max_new_tokens == 512 and s.hgmem.answer_context_tokens == 1200
    assert s.models.embedder.startswith("bundled:")


def test_cluster_profile_names_hub_models():
    s = load_settings("a100")
    assert s.models.embedder == "BAAI/bge-m3"
    assert s.models.llm == "Qwen/Qwen2.5-32B-Instruct"
    assert s.models.reranker == "BAAI/bge-reranker-v2-m3"


def test_overrides_are_typed():
    s = load_settings("local", ["hgmem.max_step=4", "generation.temperature=0.2", "hgmem.exclude_memory_entities=false"])
    assert s.hgmem.max_step == 4 and s.generation.temperature == 0.2 and s.hgmem.exclude_memory_entities is False


def test_bad_overrides_say_what_is_wrong(tmp_path: Path):
    with pytest.raises(ValidationError):
        load_settings("local", ["hgmem.max_stepz=4"])
    with pytest.raises(ValidationError):
        load_settings("local", ["chunking.size=-3"])
    with pytest.raises(ValueError, match="section.field=value"):
        load_settings("local", ["hgmem.max_steps"])
    # the old name counted rounds, the new one names the last step t: the error gives the same run
    with pytest.raises(ValidationError, match=r"renamed hgmem.max_step.*the same run is max_step=2"):
        load_settings("local", ["hgmem.max_steps=3"])
    with pytest.raises(FileNotFoundError, match="nope"):
        load_settings("nope")
    custom = tmp_path / "mine.yaml"
    custom.write_text("chunking: {size: 64, overlap: 16}\n")
    assert load_settings(custom).chunking.size == 64
