"""Counting and cutting text in the LLM's own tokens, for prompt budgets.

Why not characters: a budget of N tokens cut at 4 characters a token is wrong by
a third on names, numbers and non-English text, in both directions, so a prompt
either overflows the model's context or leaves most of it unused. The counter is
the tokenizer of ``models.llm`` (the bundled SmolLM2's from its converted folder, a
hub model's from the local cache); a model whose tokenizer is not on this machine
(an OpenAI-compatible server's, say) falls back to the estimate and says so once.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol

log = logging.getLogger("memgraft.tokens")
CHARS_PER_TOKEN = 4  # the fallback estimate only


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, tokens: int) -> str: ...


class TokenizerCounter:
    """A Hugging Face tokenizer's counts; cuts fall on token boundaries of the original text."""

    def __init__(self, tokenizer, name: str):
        self.tokenizer, self.name = tokenizer, name

    def count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else 0

    def truncate(self, text: str, tokens: int) -> str:
        if tokens <= 0 or not text:
            return ""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        return text if len(offsets) <= tokens else text[:offsets[tokens - 1][1]].rstrip() + " …"


class EstimatedCounter:
    """4 characters a token: where no tokenizer is at hand."""

    def __init__(self, name: str):
        self.name = name

    def count(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN)

    def truncate(self, text: str, tokens: int) -> str:
        limit = max(0, tokens) * CHARS_PER_TOKEN
        return text if len(text) <= limit else text[:limit].rstrip() + " …"


_LOADING = threading.Lock()


def token_counter(model: str, cache_path: str) -> TokenCounter:
    """The counter for ``models.llm``, loaded once per process under a lock (workers count many prompts, from
    many threads at once: two threads importing transformers' lazy modules together made one of them fail
    with "cannot import name 'AutoTokenizer'", and the 4-character estimate was then cached for good)."""
    with _LOADING:
        return _load_counter(model, cache_path)


@lru_cache(maxsize=8)
def _load_counter(model: str, cache_path: str) -> TokenCounter:
    from memgraft.models.llm.transformers_backend import ensure_hf_folder
    from memgraft.models.registry import is_bundled

    try:
        folder = ensure_hf_folder(model, Path(cache_path))
        if is_bundled(model) and (folder / "tokenizer.json").is_file():
            # the bundled model's Rust tokenizer alone: the same tokens and offsets (tests/test_hgmem_evidence.py) without
            # importing transformers in each question worker and ingress replica; a hub model's tokenizer may
            # adjust its tokenizer.json from its config on load, so it goes through transformers
            from memgraft.models.embedder import FastTokenizer

            return TokenizerCounter(FastTokenizer(folder / "tokenizer.json"), model)
        from transformers import AutoTokenizer

        return TokenizerCounter(AutoTokenizer.from_pretrained(str(folder)), model)
    except Exception as err:  # not on this machine (offline), or not a transformers tokenizer
        log.warning("no tokenizer for %s here (%s: %s); prompt budgets use %d characters a token",
                    model, type(err).__name__, str(err).splitlines()[0][:200] if str(err) else "", CHARS_PER_TOKEN)
        return EstimatedCounter(f"estimate ({CHARS_PER_TOKEN} characters a token)")
