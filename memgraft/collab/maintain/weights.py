"""The shipped model files of HiCoMER's updater (pair judge, pair encoder): one tagged dict of
tensors per file, read with ``weights_only`` so a file never runs code."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch


def save_weights(path: str | Path, fmt: str, config: Mapping[str, Any], state: Mapping[str, torch.Tensor],
                 metrics: Mapping[str, Any] | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": fmt, "config": dict(config), "state": dict(state), "metrics": dict(metrics or {})}, path)
    return path


def weights_path(path: str | Path, bundled: Path, what: str) -> Path:
    """``path``, or the shipped file for ``"bundled"``; a clear error where there is none."""
    p = bundled if str(path) == "bundled" else Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no {what} at {p}" + (" (run `make train-updater`)" if str(path) == "bundled" else ""))
    return p


def read_weights(path: Path, fmt: str) -> dict[str, Any]:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(blob, dict) or blob.get("format") != fmt:
        raise ValueError(f"{path} is not a {fmt} file")
    return blob
