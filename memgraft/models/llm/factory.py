"""Pick the LLM backend named by the settings; heavy imports happen only for the one chosen."""

from __future__ import annotations

from memgraft.config import Settings
from memgraft.models.llm.base import LLM


def load_llm(settings: Settings) -> LLM:
    backend = settings.models.llm_backend
    if backend == "transformers":
        from memgraft.models.llm.transformers_backend import TransformersLLM

        return TransformersLLM.from_settings(settings)
    if backend == "openai":
        from memgraft.models.llm.openai_backend import OpenAICompatibleLLM

        return OpenAICompatibleLLM.from_settings(settings)
    if backend == "vllm":
        from memgraft.models.llm.vllm_backend import VLLMEngine

        return VLLMEngine.from_settings(settings)
    raise ValueError(f"unknown LLM backend {backend!r}")
