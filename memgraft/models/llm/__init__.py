"""LLM backends: one protocol, three implementations (transformers in-process,
OpenAI-compatible HTTP, vLLM in-process), chosen by ``models.llm_backend``."""

from memgraft.models.llm.base import LLM, ChatRequest, Completion, StructuredResult, generate_structured
from memgraft.models.llm.factory import load_llm

__all__ = ["LLM", "ChatRequest", "Completion", "StructuredResult", "generate_structured", "load_llm"]
