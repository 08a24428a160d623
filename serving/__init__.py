"""The Ray Serve application: ``serve run serving:app`` (or ``python -m serving``).

``app`` is built on first access, from ``MEMGRAFT_PROFILE`` (default ``local``),
``MEMGRAFT_SET`` and ``MEMGRAFT_TOKENS``, so importing this package costs nothing
and a config made by ``serve build serving:app`` rebuilds it where it runs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app", "build_app"]


def build_app(args: dict[str, Any] | None = None):
    """An application builder: ``serve run serving:build_app profile=a100 set="serving.port=8080" tokens=t.yaml``."""
    from serving.application import build_app as build

    return build(args)


def __getattr__(name: str) -> Any:
    if name == "app":
        return build_app()
    raise AttributeError(f"module 'serving' has no attribute {name!r}")
