"""What every dataset loader shares: reading JSON records, and the fields gold must not use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

# Fields an answer line writes itself: gold under these names would be overwritten.
ANSWER_FIELDS = frozenset({"answer", "method", "error", "steps", "llm_calls", "prompt_tokens", "completion_tokens",
                           "seconds", "trace", "traceback"})


class DatasetError(ValueError):
    pass


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Objects from a JSONL file, or from a JSON file holding a list of them."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" and text.lstrip().startswith("["):
        yield from json.loads(text)
        return
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(f"{path}:{n}: not JSON ({err.msg})") from err


def extra_fields(record: Mapping[str, Any], used: Iterable[str]) -> dict[str, Any]:
    """Fields passed through as they are, less those used and those an answer line would overwrite."""
    skip = set(used) | ANSWER_FIELDS
    return {k: v for k, v in record.items() if k not in skip}
