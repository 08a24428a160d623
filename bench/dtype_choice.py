"""bf16 against fp32 for the profile's embedder and LLM, measured in one run, and what ``auto`` picks.

    python bench/dtype_choice.py [--profile local] [--rounds 3] [--tokens 48]

Runs the same probes as ``dtype: auto`` (``memgraft.models.dtype``), afresh: the
cache is neither read nor written. Prints texts/s (embedder, 16 fixed texts) or
tokens/s (LLM: whole greedy calls, a prompt of about 400 tokens then ``--tokens``, one
sequence), the bf16/fp32 ratio, the accuracy figure, and the choice; the last line says
what the cache holds for this machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def report(name: str, unit: str, trials: list) -> None:
    from memgraft.models.dtype import choose

    rate = {t.dtype: t for t in trials}
    fp32, bf16 = rate["float32"], rate["bfloat16"]
    print(f"{name}: float32 {fp32.rate:.1f} {unit}, bfloat16 {bf16.rate:.1f} {unit} "
          f"(bf16/fp32 {bf16.rate / fp32.rate:.2f}; {bf16.detail}{'' if bf16.accurate else ', rejected'}) "
          f"-> {choose(trials).dtype}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="local")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many timed runs per dtype")
    parser.add_argument("--tokens", type=int, default=48, help="greedy tokens per LLM run")
    args = parser.parse_args(argv)

    from memgraft.config import load_settings
    from memgraft.models import dtype
    from memgraft.models.embedder import SentenceTransformerEmbedder
    from memgraft.models.llm.transformers_backend import TransformersLLM

    s = load_settings(args.profile)
    m = s.models
    emb = SentenceTransformerEmbedder(m.embedder, dtype="float32", threads=m.torch_threads)
    report(emb.name, "texts/s", dtype.probe_sentence_transformer(emb._model, rounds=args.rounds))
    del emb
    llm = TransformersLLM(m.llm, dtype="float32", cache_path=s.cache_path, threads=m.torch_threads)
    report(llm.name, "tokens/s", dtype.probe_causal_lm(llm.model, llm.tokenizer, args.tokens, args.rounds))
    cached = dtype.read_choices(s.cache_path)
    held = {k: dtype.choice_key(k) in cached and cached[dtype.choice_key(k)]["dtype"] for k in (m.embedder, m.llm)}
    print(f"cached in {s.cache_path / dtype.CACHE_FILE}: {held} (profile: embedder {m.embedder_dtype}, "
          f"llm {m.llm_dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
