"""HGMem end to end on the real bundled models: every prompt schema compiles in the decoder,
and a question runs through the loop on SmolLM2 over a real graph."""

from __future__ import annotations

import pytest

from memgraft.graph.store import GraphStore
from memgraft.hgmem import prompts
from memgraft.hgmem.memory import HypergraphMemory
from memgraft.hgmem.methods import run_method
from memgraft.models.llm.base import schema_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm(settings):
    from memgraft.models.llm.transformers_backend import TransformersLLM

    # One dtype, not the profile's "auto": the probe picks bf16 or fp32 by a timing that varies with the
    # machine's load, and a 135M model's sampled reply (which this module asserts on) differs between them.
    s = settings.model_copy(deep=True)
    s.models.llm_dtype = "bfloat16"
    return TransformersLLM.from_settings(s)


def test_every_prompt_schema_compiles_in_xgrammar(smollm):
    for model in prompts.all_output_models():
        assert smollm._grammar(schema_for(model)) is not None, model.__name__


def test_hgmem_on_smollm2_over_a_real_graph(slice_graph, settings, embedder, smollm):
    s = settings.model_copy(deep=True)
    s.hgmem.max_step = 0  # t = 0 on the real model (the later steps' schemas: the test above, and scripted runs)
    s.hgmem.top_entities = 8
    s.hgmem.top_chunks = 3
    s.hgmem.answer_context_tokens = s.hgmem.evidence_tokens = 600
    store = GraphStore.load(str(slice_graph[0]), embedder)
    out = run_method("hgmem", "Who publishes the Journal of Psychotherapy Integration?", store, smollm, s)
    assert isinstance(out.answer, str) and out.answer.strip()
    assert out.steps == 1 and out.usage.calls >= 2 and out.usage.prompt_tokens > 500
    step0 = out.trace["steps"][0]
    assert step0["subqueries"][0]["entity_ids"] and step0["subqueries"][0]["chunk_ids"]
    # schema-constrained: step 0 must insert at least one memory point over real or marked entities
    memory = HypergraphMemory.from_dict(step0["memory_after"])
    memory.check_invariants()
    assert step0["operations"]["inserts"] and len(memory) >= 1
