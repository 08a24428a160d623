"""bf16 or fp32, chosen by measuring this model on this CPU once.

Which dtype is faster depends on the model and the CPU: on a CPU with
avx512_bf16 all-MiniLM encoded twice as fast in bf16, on an EPYC without it
3.5x slower. A profile that says ``auto`` therefore times the model in both
dtypes on a few fixed inputs the first time it loads on a machine, keeps the
faster of those within the accuracy bound, and caches the choice in a small
JSON under the settings' cache path, keyed by model, CPU (model name and a
hash of its flags), torch version and package versions. An explicit dtype is
never probed; a GPU keeps bf16.

    python -m memgraft.models.probe_dtypes --probe [--profile local]   # fill the cache now
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import importlib.metadata
import json
import logging
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

log = logging.getLogger("memgraft.models.dtype")

AUTO = "auto"
FLOAT32, BFLOAT16 = "float32", "bfloat16"
CACHE_FILE = "dtype-choices.json"
PROBE_VERSION = "3"  # part of the key: a changed probe measures anew

# Embeddings: bf16 must keep every probe text's vector this close to fp32's.
MIN_COSINE = 0.999
# LLM: bf16 rounding flips near-ties, so greedy text diverges after a few tokens
# even when the model is the same (SmolLM2 here: token 5 of 24, with the next-token
# distributions within KL 0.003 nats). Teacher-forced on fp32's greedy continuation,
# bf16 must pick fp32's token at most positions and keep the distribution the
# sampler draws from close: mean KL(fp32 || bf16) per position.
MIN_TOP1_AGREEMENT = 0.9
MAX_MEAN_KL = 0.01

PROBE_TEXTS = [
    "The committee approved the budget after a long debate about road repairs in the northern district.",
    "Compound A is banned; stop synthesis until the safety review is complete.",
    "Marie Curie was a physicist who worked in Paris at the University of Paris.",
    "The Treaty of Versailles was signed in 1919 by Germany and the Allied Powers.",
    "Rain is expected on Tuesday, clearing by the weekend with lighter winds from the west.",
    "The river flows south through three provinces before it reaches the delta and the sea.",
    "Our team scheduled another synthesis run for Thursday morning in laboratory four.",
    "He played for the club for eleven seasons and later coached its youth academy.",
    "The library opens at nine, closes at six, and lends up to twelve books per card.",
    "A memory bank keeps each record's validity so that outdated facts can be revised.",
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules.",
    "The novel follows two sisters who inherit a failing vineyard in the hills above the coast.",
    "Prices rose by four percent last quarter, mostly because of energy and transport costs.",
    "The bridge was closed for inspection after engineers found cracks in two of its supports.",
    "She was elected mayor in 2004 and re-elected twice before retiring from public office.",
    "The protocol requires two signatures before any sample leaves the cold storage room.",
]
# A call as the system makes one: HGMem's and the updater's prompts run 300 to 1,400 tokens, so the probe's
# prompt holds a few hundred (about 400 with SmolLM2's tokenizer) and its timing covers the prefill, then
# decoding. With a 15-token prompt, bf16 decoded SmolLM2 1.5x as fast as fp32 on an EPYC without avx512_bf16,
# yet prefilled 300 tokens 6x as slowly: the probe chose bf16, and real calls ran at about half fp32's speed.
PROBE_PROMPT = [{"role": "user", "content": "Notes:\n" + "\n".join(PROBE_TEXTS * 2)
                 + "\n\nName three facts these notes state, briefly."}]
PROBE_NEW_TOKENS = 48
# bf16 must beat fp32 (exact, the reference) by this much: a near-tie is noise on a shared machine.
MIN_GAIN = 0.05


@dataclass(frozen=True)
class Trial:
    """One dtype's measurement: throughput and whether it stayed within the accuracy bound."""

    dtype: str
    rate: float  # texts/s (embedder) or tokens/s (LLM)
    accurate: bool
    detail: str = ""  # the accuracy figure, e.g. "cosine 0.99991"


def choose(trials: Sequence[Trial]) -> Trial:
    """The fastest accurate trial, if it beats fp32 by ``MIN_GAIN``; else fp32 (the reference)."""
    ref = next((t for t in trials if t.dtype == FLOAT32), Trial(FLOAT32, 0.0, True, "fallback"))
    ok = [t for t in trials if t.accurate and t.dtype != FLOAT32]
    best = max(ok, key=lambda t: t.rate, default=None)
    return best if best is not None and best.rate > ref.rate * (1 + MIN_GAIN) else ref


# -- the cache key ----------------------------------------------------------------


def cpu_description(cpuinfo: str | Path = "/proc/cpuinfo") -> dict[str, str]:
    """The CPU's model name and a hash of its flags: what decides whether bf16 is native."""
    import platform

    name, flags = "", ""
    with contextlib.suppress(OSError):
        for line in Path(cpuinfo).read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and not name:
                name = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = " ".join(sorted(set(value.split())))
    name = name or platform.processor() or platform.machine()
    return {"cpu": name, "flags_sha": hashlib.sha256(flags.encode()).hexdigest()[:16]}


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def key_parts(model: str, cpu: dict[str, str] | None = None) -> dict[str, str]:
    import torch

    from memgraft.models.registry import bundled_package

    parts = {"model": model, **(cpu or cpu_description()), "torch": torch.__version__,
             "memgraft": _version("memgraft"), "probe": PROBE_VERSION}
    package = bundled_package(model)
    if package:
        parts["package"] = f"{package}=={_version(package)}"
    return parts


def choice_key(model: str, cpu: dict[str, str] | None = None) -> str:
    return json.dumps(key_parts(model, cpu), sort_keys=True)


# -- the cache file ---------------------------------------------------------------


@contextlib.contextmanager
def _locked(cache_path: Path) -> Iterator[None]:
    """One prober per machine: parallel workers probing at once would time each other."""
    cache_path.mkdir(parents=True, exist_ok=True)
    with open(cache_path / f"{CACHE_FILE}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_choices(cache_path: Path) -> dict[str, Any]:
    try:
        data = json.loads((cache_path / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_choices(cache_path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{CACHE_FILE}.", dir=cache_path)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.chmod(tmp, 0o644)
    os.replace(tmp, cache_path / CACHE_FILE)


_said: set[str] = set()  # keys whose choice this process has logged


def _say(model: str, unit: str, record: dict[str, Any], how: str) -> None:
    figures = ", ".join(f"{t['dtype']} {t['rate']:.1f} {unit}"
                        + (f" ({t['detail']})" if t.get("detail") else "") + ("" if t["accurate"] else " rejected")
                        for t in record["trials"])
    log.info("%s in %s (%s: %s)", model, record["dtype"], how, figures)


def resolve_dtype(requested: str, *, model: str, cache_path: Path, probe: Callable[[], Sequence[Trial]],
                  unit: str = "texts/s", cpu: dict[str, str] | None = None) -> str:
    """``requested`` unless it is ``auto``; then bf16 on a GPU, else the cached or measured choice."""
    if requested != AUTO:
        return requested
    import torch

    if torch.cuda.is_available():
        return BFLOAT16
    key = choice_key(model, cpu)
    with _locked(cache_path):
        record = read_choices(cache_path).get(key)
        how = "cached choice"
        if not record or record.get("dtype") not in (FLOAT32, BFLOAT16):
            trials = list(probe())
            record = {"dtype": choose(trials).dtype, "unit": unit, "trials": [asdict(t) for t in trials],
                      "key": key_parts(model, cpu), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
            data = read_choices(cache_path)
            data[key] = record
            _write_choices(cache_path, data)
            how = "measured"
    if key not in _said or how == "measured":
        _said.add(key)
        _say(model, unit, record, how)
    return record["dtype"]


# -- probes -----------------------------------------------------------------------


def _best_rates(runs: dict[str, Callable[[], Any]], warm: dict[str, Callable[[], Any]], count: int,
                rounds: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Interleaved best-of-``rounds`` throughput per dtype (a busy neighbour slows a run, never speeds it)."""
    for name in runs:
        warm[name]()  # first-call allocations and kernel selection stay out of the timing
    best: dict[str, float] = {}
    outputs: dict[str, Any] = {}
    for _ in range(rounds):
        for name, run in runs.items():
            t = time.perf_counter()
            outputs[name] = run()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t)
    return {n: count / max(s, 1e-9) for n, s in best.items()}, outputs


def probe_sentence_transformer(model: Any, texts: Sequence[str] = PROBE_TEXTS, rounds: int = 2) -> list[Trial]:
    """Time a loaded fp32 SentenceTransformer against a bf16 copy; cosine of every vector to fp32's."""
    import numpy as np
    import torch

    half = copy.deepcopy(model).to(torch.bfloat16)

    def run(m: Any, few: int | None = None) -> Callable[[], Any]:
        return lambda: m.encode(list(texts[:few]), batch_size=len(texts), normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    rates, out = _best_rates({FLOAT32: run(model), BFLOAT16: run(half)},
                             {FLOAT32: run(model, 2), BFLOAT16: run(half, 2)}, len(texts), rounds)
    del half
    ref, low = out[FLOAT32], out[BFLOAT16]
    cos = float(np.min(np.sum(ref * low, axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(low, axis=1))))
    return [Trial(FLOAT32, rates[FLOAT32], True, "reference"),
            Trial(BFLOAT16, rates[BFLOAT16], cos >= MIN_COSINE, f"min cosine {cos:.5f}")]


def probe_causal_lm(model: Any, tokenizer: Any, new_tokens: int = PROBE_NEW_TOKENS, rounds: int = 2) -> list[Trial]:
    """Time whole greedy calls (prefill, then decoding) of a loaded fp32 model against a bf16 copy; bf16's logits
    on fp32's tokens."""
    import torch

    text = tokenizer.apply_chat_template(PROBE_PROMPT, tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    half = copy.deepcopy(model).to(torch.bfloat16)

    def run(m: Any, n: int = new_tokens) -> Callable[[], Any]:
        def go() -> list[int]:  # exactly n tokens: the end token is suppressed, so both dtypes time the same work
            with torch.inference_mode():
                out = m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                 min_new_tokens=n, do_sample=False, temperature=None, top_p=None,
                                 top_k=None, pad_token_id=pad)
            return out[0, ids.shape[1]:].tolist()
        return go

    rates, out = _best_rates({FLOAT32: run(model), BFLOAT16: run(half)},
                             {FLOAT32: run(model, 2), BFLOAT16: run(half, 2)}, new_tokens, rounds)
    agree, kl = logits_agreement(model, half, ids, out[FLOAT32])
    del half
    ok = agree >= MIN_TOP1_AGREEMENT and kl <= MAX_MEAN_KL
    return [Trial(FLOAT32, rates[FLOAT32], True, "reference"),
            Trial(BFLOAT16, rates[BFLOAT16], ok, f"top-1 {agree:.2f}, mean KL {kl:.4f}")]


def logits_agreement(ref: Any, low: Any, prompt: Any, tokens: list[int]) -> tuple[float, float]:
    """Teacher-forced on ``tokens``: the share of positions where ``low`` picks them, and mean KL(ref || low)."""
    import torch

    full = torch.cat([prompt[0], torch.tensor(tokens, dtype=prompt.dtype)])[None]
    start = prompt.shape[1] - 1
    with torch.inference_mode():
        p = ref(full).logits[0, start:-1].float().log_softmax(-1)
        q = low(full).logits[0, start:-1].float().log_softmax(-1)
    agree = float((q.argmax(-1) == torch.tensor(tokens)).float().mean())
    kl = float((p.exp() * (p - q)).sum(-1).mean())
    return agree, kl
