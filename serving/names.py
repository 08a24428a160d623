"""Names from URLs to files: a strict pattern first, so no name can leave its folder.

A team, graph or trace name reaches the filesystem only after matching a pattern
with no separators, no dots at the start and a bounded length; ``..``, ``/``,
``%2F`` and absolute paths never match, so a path is always ``<folder>/<name>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# record_answer writes <id>.<method>.json; the id part is ours (a uuid hex), the method one of METHODS
TRACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,119}\.[a-z][a-z-]{0,39}$")


class BadName(ValueError):
    """A name in a URL that does not match its pattern."""


def check(kind: str, name: str, pattern: re.Pattern[str] = NAME) -> str:
    if not pattern.fullmatch(name):
        raise BadName(f"{kind} name {name!r} is not allowed: use letters, digits, '-' and '_' "
                      f"(at most 64, starting with a letter or digit)")
    return name


def bank_path(banks_dir: str | Path, team: str) -> Path:
    """Team ``team``'s bank: ``<banks_dir>/<team>.sqlite``."""
    return Path(banks_dir) / f"{check('team', team)}.sqlite"


def banks_url(setting: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``serving.banks_url`` as a URL: ``$NAME`` is read from the environment (where the bank is opened)."""
    if not setting or not setting.startswith("$"):
        return setting or None
    value = (os.environ if environ is None else environ).get(setting[1:])
    if not value:
        raise LookupError(f"serving.banks_url names {setting}, which is not set in this process's environment")
    return value


def graph_path(graphs_dir: str | Path, graph: str) -> Path:
    """Graph ``graph``: the folder directly under ``graphs_dir``."""
    return Path(graphs_dir) / check("graph", graph)


def trace_path(traces_dir: str | Path, trace_id: str, suffix: str = ".json") -> Path:
    return Path(traces_dir) / f"{check('trace', trace_id, TRACE)}{suffix}"
