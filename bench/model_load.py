"""A fresh process's time to its first vector and first pair reading, through the libraries and through
memgraft.models.bert, in one run.

    python bench/model_load.py [--rounds 3]

Each measurement is its own Python process (what a Ray worker or a Serve replica pays once it starts): it
imports what the path needs, loads the bundled all-MiniLM-L6-v2 (or the bundled pair encoder) and encodes
a few texts. Paths: ``sentence-transformers`` (the library's SentenceTransformer), ``bert`` (what
``load_embedder`` now loads), ``peft`` (the PairEncoder training uses, folded for inference) and ``folded``
(what ``load_pair_encoder`` now loads). Prints the best time of each, the ratios, and the largest difference
between the two paths' outputs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEXTS = ["Deploys now happen on Thursdays instead of Tuesdays.", "Stand-up is at 9:30 every day.",
         "The owner of Pelican (Fabergé egg) is Lillian Thomas Pratt."]
OTHER = ["Deploys happen on Tuesdays.", "Stand-up moves to 10:00.", "The owner of Rock Crystal (Fabergé egg) is Post."]

CHILD = """
import json, sys, time
t = time.perf_counter()
path = sys.argv[1]
texts, other = json.loads(sys.argv[2]), json.loads(sys.argv[3])
if path == "sentence-transformers":
    from sentence_transformers import SentenceTransformer
    from memgraft.models.registry import resolve
    out = SentenceTransformer(resolve("bundled:all-MiniLM-L6-v2"), device="cpu").encode(texts, normalize_embeddings=True)
elif path == "bert":
    from memgraft.models.bert import BertSentenceEncoder
    from memgraft.models.registry import resolve
    out = BertSentenceEncoder(resolve("bundled:all-MiniLM-L6-v2")).encode(texts, normalize_embeddings=True)
elif path == "peft":
    from memgraft.collab.maintain.pair_encoder import load_trainable_pair_encoder
    out = load_trainable_pair_encoder("bundled").probabilities(texts, other)
else:
    from memgraft.collab.maintain.pair_encoder import load_pair_encoder
    out = load_pair_encoder("bundled").probabilities(texts, other)
print(json.dumps({"seconds": time.perf_counter() - t, "out": out.tolist()}))
"""


def measure(path: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, path, json.dumps(TEXTS), json.dumps(OTHER)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise SystemExit(f"{path}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="processes per path; the best time counts")
    args = ap.parse_args()
    import numpy as np

    best: dict[str, float] = {}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):  # interleaved, so a busy moment of the machine hits every path alike
        for path in ("sentence-transformers", "bert", "peft", "folded"):
            got = measure(path)
            best[path] = min(best.get(path, float("inf")), got["seconds"])
            outputs[path] = np.asarray(got["out"], dtype=np.float32)
    for slow, fast, what in (("sentence-transformers", "bert", "embedder"), ("peft", "folded", "pair encoder")):
        diff = float(np.abs(outputs[slow] - outputs[fast]).max())
        print(f"{what}: {slow} {best[slow]:.2f} s, {fast} {best[fast]:.2f} s (ratio {best[slow] / best[fast]:.2f}); "
              f"largest difference of the outputs {diff:.1e}")


if __name__ == "__main__":
    main()
