"""In-process chat generation with transformers, constrained by xgrammar.

The embedded default. The bundled SmolLM2 ships only as a GGUF file, which
transformers de-quantizes slowly (~15 s); it is converted once into a normal
model folder under the cache, named by the package's version so an upgraded
package converts anew, and every later load takes about a second.
JSON-schema requests decode under an xgrammar logits processor, which is what
makes a 135M model's output parse at all.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from memgraft.config import Settings
from memgraft.models.llm.base import ChatRequest, Completion, check_fits
from memgraft.models.llm.deadline import any_deadline, deadline_criteria
from memgraft.models.registry import display_name, is_bundled, package_version, resolve
from memgraft.models.threads import set_torch_threads

# Marker written last into a converted folder; a folder without it is not trusted.
_MARKER = "memgraft-source.json"
GRAMMAR_CACHE = 256  # compiled grammars kept, least recently used dropped first


def _atomic_write_dir(final: Path, write: Callable[[Path], None]) -> Path:
    """Let ``write`` fill a temp folder beside ``final``, then rename it into place.

    A rename is atomic on one filesystem, so a concurrent reader sees either no
    folder or a complete one; when two processes race, the first rename wins and
    the loser's copy is thrown away.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide the cache from other users
    try:
        write(tmp)
        try:
            os.rename(tmp, final)
        except OSError as err:
            if not (final / _MARKER).exists():
                raise RuntimeError(f"{final} exists but is incomplete (no {_MARKER}); delete it and retry") from err
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


@contextlib.contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """transformers parses a GGUF file anew for the tokenizer, the config and the weights, and rebuilds gguf's
    tensor-name map for every tensor: 45 of a 55 s conversion of SmolLM2 on 2 cores. Inside this block a
    file is parsed once and a map built once per architecture (the readers are only read from)."""
    import gguf

    real_reader, real_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple, Any] = {}

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = real_reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.lru_cache(maxsize=None)(real_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = real_reader, real_map


def _load_from_gguf(gguf: Path, dtype: Any):
    """Load a model and tokenizer from a GGUF file, de-quantized to plain weights."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"gguf_file": gguf.name, "dtype": dtype}
    gguf_config = getattr(transformers, "GgufConfig", None)
    if gguf_config is not None and "dequantize" in inspect.signature(gguf_config.__init__).parameters:
        kwargs["quantization_config"] = gguf_config(dequantize=True)
    with _gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), **kwargs)
    return model, tokenizer


def ensure_hf_folder(model: str, cache_path: Path) -> Path:
    """A normal transformers folder for ``model``, converting a bundled GGUF once.

    Non-bundled names are returned as they resolve (a path or a hub id). The
    bundled conversion is kept in float32, the GGUF's de-quantized precision,
    so later loads in any dtype round only once. vLLM loads the same folder.
    """
    source = resolve(model)
    if not is_bundled(model) or not source.endswith(".gguf"):
        return Path(source)
    import torch

    gguf = Path(source)
    version = package_version(model) or "unknown"
    final = converted_folder(model, cache_path)
    source_info = {"gguf": gguf.name, "bytes": gguf.stat().st_size, "package_version": version}
    if (final / _MARKER).exists():
        try:
            recorded = json.loads((final / _MARKER).read_text())
        except ValueError:
            recorded = {}
        if recorded == source_info:
            return final
        raise RuntimeError(f"{final} was converted from {recorded}, not {source_info}; delete it and retry")

    def write(tmp: Path) -> None:
        hf_model, tokenizer = _load_from_gguf(gguf, torch.float32)
        hf_model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _MARKER).write_text(json.dumps(source_info))

    return _atomic_write_dir(final, write)


def converted_folder(model: str, cache_path: Path) -> Path:
    """Where a bundled model's conversion lives: one folder per package version."""
    return cache_path / "models" / f"{display_name(model)}-{package_version(model) or 'unknown'}"


class TransformersLLM:
    """A causal LM decoding batches with left padding, under xgrammar when a schema is given."""

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "bfloat16",  # or "float32", or "auto": measured once per model and CPU
        batch_size: int = 4,
        cache_path: Path | None = None,
        threads: int = 0,
        temperature: float = 0.8,
        max_new_tokens: int = 2048,
        seed: int | None = 0,
        top_p: float = 1.0,
        top_k: int = 0,
        repetition_penalty: float = 1.0,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        set_torch_threads(threads)
        self.name = display_name(model)
        self.batch_size = max(1, batch_size)
        self.default_temperature = temperature
        self.default_max_new_tokens = max_new_tokens
        self.seed = seed
        self.top_p, self.top_k, self.repetition_penalty = top_p, top_k, repetition_penalty
        self._calls = 0
        from memgraft.models.dtype import AUTO, probe_causal_lm, resolve_dtype

        cache = cache_path or Path(tempfile.gettempdir()) / "memgraft"
        folder = ensure_hf_folder(model, cache)
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        # auto loads fp32 (the probe's reference), then rounds to bf16 if that was chosen.
        first = torch.float32 if dtype in (AUTO, "float32") else torch.bfloat16
        self.model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=first)
        self.model.eval()
        self.dtype = resolve_dtype(dtype, model=model, cache_path=cache, unit="tokens/s",
                                   probe=lambda: probe_causal_lm(self.model, self.tokenizer))
        if self.model.dtype != (torch.bfloat16 if self.dtype == "bfloat16" else torch.float32):
            self.model = self.model.to(torch.bfloat16 if self.dtype == "bfloat16" else torch.float32)
        self.eos_ids = self._eos_ids()
        self._grammar_compiler = None
        self._grammars: dict[str, Any] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> "TransformersLLM":
        m, g = settings.models, settings.generation
        return cls(
            m.llm, dtype=m.llm_dtype, batch_size=m.llm_batch_size, cache_path=settings.cache_path,
            threads=m.torch_threads, temperature=g.temperature, max_new_tokens=g.max_new_tokens, seed=g.seed,
            top_p=g.top_p, top_k=g.top_k, repetition_penalty=g.repetition_penalty,
        )

    def _eos_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        if ids is None:
            ids = self.tokenizer.eos_token_id
        ids = [ids] if isinstance(ids, int) else list(ids)
        return sorted({int(i) for i in ids if i is not None})

    # -- grammars -----------------------------------------------------------------

    def _grammar(self, schema: dict[str, Any]):
        """Compile (once per distinct schema) the grammar a schema request decodes under."""
        import xgrammar as xgr

        key = json.dumps(schema)  # not sorted: xgrammar keeps the schema's property order
        if key in self._grammars:
            self._grammars[key] = self._grammars.pop(key)  # most recently used last
        else:
            while len(self._grammars) >= GRAMMAR_CACHE:  # HGMem's schemas name each step's entities: bound them
                self._grammars.pop(next(iter(self._grammars)))
            if self._grammar_compiler is None:
                # The logits can be wider than the tokenizer's vocabulary: size the masks to the model.
                info = xgr.TokenizerInfo.from_huggingface(
                    self.tokenizer, vocab_size=self.model.config.vocab_size, stop_token_ids=self.eos_ids
                )
                self._grammar_compiler = xgr.GrammarCompiler(info)
            # Compact JSON: with free whitespace a small model can pad forever.
            self._grammars[key] = self._grammar_compiler.compile_json_schema(key, any_whitespace=False)
        return self._grammars[key]

    # -- generation ---------------------------------------------------------------

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Decode every request; requests sharing sampling settings share ``generate`` calls.

        Within a group, prompts are sorted by length before batching so each
        batch pads little. Results come back in the order asked.
        """
        out: list[Completion | None] = [None] * len(requests)
        prompts = [self._prompt_ids(r) for r in requests]
        for p, r in zip(prompts, requests):  # a prompt over the context would be cut by the model, or crash it
            check_fits(len(p), self._sampling_key(r)[1], self.context_tokens, "the model's tokenizer")
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            groups[self._sampling_key(r)].append(i)
        for key, idxs in groups.items():
            idxs.sort(key=lambda i: len(prompts[i]))
            for start in range(0, len(idxs), self.batch_size):
                chunk = idxs[start:start + self.batch_size]
                done = self._generate_batch([prompts[i] for i in chunk], [requests[i] for i in chunk], key)
                for i, completion in zip(chunk, done):
                    out[i] = completion
        assert all(c is not None for c in out)
        return out  # type: ignore[return-value]

    @property
    def context_tokens(self) -> int | None:
        """Prompt and generated tokens the model attends over at most (its position embeddings)."""
        n = getattr(self.model.config, "max_position_embeddings", None)
        return int(n) if n else None

    def _sampling_key(self, r: ChatRequest) -> tuple:
        temperature = self.default_temperature if r.temperature is None else r.temperature
        max_new = self.default_max_new_tokens if r.max_new_tokens is None else r.max_new_tokens
        return (float(temperature), int(max_new), r.seed, r.json_schema is not None)

    def _prompt_ids(self, r: ChatRequest) -> list[int]:
        text = self.tokenizer.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
        # The template already holds the special tokens.
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _generate_batch(self, prompts: list[list[int]], requests: list[ChatRequest], key: tuple) -> list[Completion]:
        import torch

        temperature, max_new, seed, constrained = key
        pad = self.tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], dtype=torch.long)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long)
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new, "pad_token_id": pad, "eos_token_id": self.eos_ids,
            "repetition_penalty": self.repetition_penalty,
        }
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=self.top_p, top_k=self.top_k)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if constrained:
            from xgrammar.contrib.hf import LogitsProcessor

            # A processor holds per-row matcher state, so it is never reused across calls.
            kwargs["logits_processor"] = [LogitsProcessor([self._grammar(r.json_schema or {}) for r in requests])]
        deadlines = None
        if any_deadline(requests):
            from transformers import StoppingCriteriaList

            deadlines = deadline_criteria(requests, width, self.eos_ids)
            kwargs["stopping_criteria"] = StoppingCriteriaList([deadlines])
        # A fixed seed stream, advanced per call: reproducible, yet a retry is a fresh draw.
        call_seed = seed if seed is not None else (None if self.seed is None else self.seed + self._calls)
        self._calls += 1
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            if call_seed is not None:
                torch.manual_seed(call_seed)
            generated = self.model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
        out = [self._completion(row[width:].tolist(), len(p), max_new) for row, p in zip(generated, prompts)]
        for i in deadlines.cut if deadlines is not None else ():  # stopped by its caller's deadline, unfinished
            out[i] = replace(out[i], finish_reason="timeout")
        return out

    def _completion(self, tokens: list[int], prompt_tokens: int, max_new: int) -> Completion:
        """Cut a row at its first end token; the end token counts as generated, padding does not."""
        end = next((j for j, t in enumerate(tokens) if t in self.eos_ids), None)
        if end is None:
            return Completion(
                self.tokenizer.decode(tokens, skip_special_tokens=True), prompt_tokens, len(tokens),
                "length" if len(tokens) >= max_new else "stop",
            )
        return Completion(self.tokenizer.decode(tokens[:end], skip_special_tokens=True), prompt_tokens, end + 1, "stop")
