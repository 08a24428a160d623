"""The web page at ``/ui``: static files from ``serving/ui/`` (HTML, CSS, plain JS modules; no build step).

The files hold no data and no secrets, so they are served without a token; the
page asks for one and sends it with every API call, where the routes check it.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

PATH = "/ui"
FILES = Path(__file__).with_name("ui")


def mount(api: FastAPI) -> None:
    """Serve the page at ``/ui/`` (``/ui`` redirects there, so its relative links resolve)."""
    api.mount(PATH, StaticFiles(directory=FILES, html=True), name="ui")
