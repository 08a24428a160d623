"""Fill the dtype cache now: load a profile's local models, probing each ``auto`` dtype once.

    python -m memgraft.models.probe_dtypes --probe [--profile local]

Apart from :mod:`memgraft.models.dtype` because it loads the embedder and the LLM, and
those stand on the dtype choice; the command stands above all three.
"""

from __future__ import annotations

import argparse
import logging
import sys

from memgraft.models.dtype import CACHE_FILE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="measure and cache the auto dtypes of a profile's local models")
    parser.add_argument("--probe", action="store_true", help="load the profile's models, probing where 'auto'")
    parser.add_argument("--profile", default="local")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from memgraft.config import load_settings
    from memgraft.models.embedder import load_embedder
    from memgraft.models.llm.transformers_backend import TransformersLLM

    settings = load_settings(args.profile)
    m = settings.models
    embedder = load_embedder(settings)
    print(f"embedder {embedder.name}: {embedder.dtype} (profile: {m.embedder_dtype})")
    if m.llm_backend == "transformers":
        llm = TransformersLLM.from_settings(settings)
        print(f"llm {llm.name}: {llm.dtype} (profile: {m.llm_dtype})")
    print(f"choices cached in {settings.cache_path / CACHE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
