"""The bundled LLM's GGUF conversion with transformers' own parsing against one parse per file, in one run.

    python bench/gguf_convert.py [--model bundled:SmolLM2-135M-Instruct]

Converts the model twice into fresh temporary caches, first as transformers alone does it (the file parsed
for the tokenizer, the config and the weights, gguf's tensor-name map rebuilt per tensor), then inside
``_gguf_parsed_once`` as ``ensure_hf_folder`` does; prints both times, their ratio, and whether every
weight and tokenizer file came out the same.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def convert(model: str, once: bool, cache: Path) -> tuple[float, Path]:
    from memgraft.models.llm import transformers_backend as tb

    real = tb._gguf_parsed_once
    if not once:
        tb._gguf_parsed_once = contextlib.nullcontext  # transformers' own parsing
    try:
        t = time.perf_counter()
        folder = tb.ensure_hf_folder(model, cache)
        return time.perf_counter() - t, folder
    finally:
        tb._gguf_parsed_once = real


def same_output(a: Path, b: Path) -> bool:
    import torch
    from safetensors.torch import load_file

    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    weights = wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    files = {p.name for p in a.iterdir()} == {p.name for p in b.iterdir()}
    tokenizer = all((a / n).read_bytes() == (b / n).read_bytes() for n in ("tokenizer.json", "config.json"))
    return weights and files and tokenizer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled:SmolLM2-135M-Instruct")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gguf-bench-") as tmp:  # two converted models: ~1 GB, deleted after
        plain, a = convert(args.model, once=False, cache=Path(tmp) / "plain")
        once, b = convert(args.model, once=True, cache=Path(tmp) / "once")
        same = same_output(a, b)
    print(f"{args.model}: transformers' parsing {plain:.1f} s, one parse per file {once:.1f} s "
          f"(ratio {plain / once:.2f}); same weights, config and tokenizer: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
