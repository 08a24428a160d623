"""Choose the extractor the settings name."""

from __future__ import annotations

from memgraft.config import Settings
from memgraft.graph.extraction import Extractor


def make_extractor(settings: Settings) -> Extractor:
    if settings.extraction.method == "spacy":
        from memgraft.graph.spacy_extractor import SpacyExtractor

        return SpacyExtractor(settings.extraction, settings.models.spacy_model)
    if settings.extraction.method == "openie":
        from memgraft.graph.openie_extractor import OpenIEExtractor

        return OpenIEExtractor(settings.extraction, settings.models.spacy_model)
    from memgraft.graph.llm_extractor import LLMExtractor
    from memgraft.models.llm import load_llm

    return LLMExtractor(load_llm(settings), settings)
