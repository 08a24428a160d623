"""Read documents from files, rejecting bad ones with a reason instead of failing the job.

Accepted (DESIGN.md, Data formats): ``.txt``/``.md`` (doc_id = path relative to the
input root), ``.jsonl``/``.json`` (objects with ``text`` and optional
``doc_id``/``id``/``title``; also a JSON object mapping titles to text or to a
list of sentences, as HotpotQA's corpus is), and ``.parquet`` (``text``,
optional ``doc_id``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from memgraft.ids import content_hash

log = logging.getLogger(__name__)

TEXT_SUFFIXES = {".txt", ".md"}
SUFFIXES = TEXT_SUFFIXES | {".jsonl", ".json", ".parquet"}


@dataclass
class Document:
    doc_id: str
    text: str
    source: str
    title: str = ""

    @property
    def content_hash(self) -> str:
        return content_hash(self.text, length=40)


@dataclass
class Rejection:
    source: str
    reason: str
    doc_id: str = ""


def list_input_files(path: str | Path) -> tuple[Path, list[Path]]:
    """The input root and every file under it, in a stable order."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"input {root} does not exist")
    if root.is_file():
        return root.parent, [root]
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    return root, files


def _title_text(title: str, text: str) -> str:
    """Index a titled passage as ``title`` then its text, as HippoRAG does: the title names its subject."""
    return f"{title}\n\n{text}" if title and not text.startswith(title) else text


def _too_big(size: int, limit: int) -> str:
    return f"document is {size / 1e6:.1f} MB, over the limit of {limit / 1e6:g} MB (pipeline.max_document_mb)"


def _check_text(text: Any, where: str, doc_id: str, max_chars: int) -> Rejection | None:
    if not isinstance(text, str):
        return Rejection(where, f"field 'text' is {type(text).__name__}, not a string", doc_id)
    if not text.strip():
        return Rejection(where, "empty document", doc_id)
    if len(text) > max_chars // 4 and (size := len(text.encode("utf-8"))) > max_chars:
        return Rejection(where, _too_big(size, max_chars), doc_id)
    return None


def _records(objects: list[Any], where: str, rel: str, max_chars: int) -> Iterator[Document | Rejection]:
    seen_titles: dict[str, int] = {}
    for i, obj in enumerate(objects):
        here = f"{where}[{i}]"
        if not isinstance(obj, dict):
            yield Rejection(here, f"record is {type(obj).__name__}, not an object")
            continue
        title = str(obj.get("title") or "")
        doc_id = obj.get("doc_id") or obj.get("id")
        if not doc_id and title:
            n = seen_titles[title] = seen_titles.get(title, 0) + 1
            doc_id = title if n == 1 else f"{title} #{n}"
        doc_id = str(doc_id or f"{rel}#{i}")
        if "text" not in obj:
            yield Rejection(here, "record has no 'text' field", doc_id)
            continue
        bad = _check_text(obj["text"], here, doc_id, max_chars)
        if bad:
            yield bad
            continue
        yield Document(doc_id, _title_text(title, obj["text"]), here, title)


def _json_objects(data: Any) -> list[Any] | None:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and "text" in data:
        return [data]
    if isinstance(data, dict) and all(isinstance(v, (str, list)) for v in data.values()):
        # {title: text} or {title: [sentences]} (HotpotQA's corpus)
        return [{"title": k, "text": v if isinstance(v, str) else "".join(map(str, v))} for k, v in data.items()]
    return None


def read_file(path: Path, root: Path, max_mb: float) -> Iterator[Document | Rejection]:
    """Every document in one file, or the reasons it has none."""
    rel = path.relative_to(root).as_posix() if path != root else path.name
    max_chars = int(max_mb * 1_000_000)  # UTF-8 bytes
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        yield Rejection(rel, f"unsupported file type {suffix or '(none)'!r}; expected one of {sorted(SUFFIXES)}")
        return
    size = path.stat().st_size
    if size == 0:
        yield Rejection(rel, "empty file", rel if suffix in TEXT_SUFFIXES else "")
        return
    if suffix in TEXT_SUFFIXES and size > max_chars:  # rejected unread
        yield Rejection(rel, _too_big(size, max_chars), rel)
        return
    if suffix == ".parquet":
        yield from _read_parquet(path, rel, max_chars)
        return
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        yield Rejection(rel, f"undecodable bytes: not UTF-8 at byte {err.start}", rel if suffix in TEXT_SUFFIXES else "")
        return
    if suffix in TEXT_SUFFIXES:
        bad = _check_text(text, rel, rel, max_chars)
        yield bad if bad else Document(rel, text, rel)
    elif suffix == ".jsonl":
        yield from _read_jsonl(text, rel, max_chars)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            yield Rejection(rel, f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}")
            return
        objects = _json_objects(data)
        if objects is None:
            yield Rejection(rel, "JSON is neither a list of objects, an object with 'text', nor a title-to-text map")
            return
        yield from _records(objects, rel, rel, max_chars)


def _read_jsonl(text: str, rel: str, max_chars: int) -> Iterator[Document | Rejection]:
    objects: list[Any] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            objects.append(json.loads(line))
        except json.JSONDecodeError as err:
            objects.append(None)
            yield Rejection(f"{rel}:{lineno}", f"invalid JSON: {err.msg}")
    good = [(i, o) for i, o in enumerate(objects) if o is not None]
    for (i, _), item in zip(good, _records([o for _, o in good], rel, rel, max_chars)):
        if isinstance(item, Rejection):
            item.source = f"{rel}[{i}]"
        yield item


def _read_parquet(path: Path, rel: str, max_chars: int) -> Iterator[Document | Rejection]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several types for a corrupt file
        yield Rejection(rel, f"unreadable Parquet: {err}")
        return
    if "text" not in table.column_names:
        yield Rejection(rel, f"Parquet file has no 'text' column (columns: {table.column_names})")
        return
    yield from _records(table.to_pylist(), rel, rel, max_chars)


def read_files(paths: list[Path], root: Path, max_mb: float) -> tuple[list[Document], list[Rejection]]:
    """Read many files; duplicate doc_ids after the first are rejected."""
    docs: dict[str, Document] = {}
    rejected: list[Rejection] = []
    for path in paths:
        for item in read_file(path, root, max_mb):
            if isinstance(item, Rejection):
                rejected.append(item)
            elif item.doc_id in docs:
                rejected.append(Rejection(item.source, f"duplicate doc_id (first in {docs[item.doc_id].source})", item.doc_id))
            else:
                docs[item.doc_id] = item
    for r in rejected:
        log.warning("rejected %s%s: %s", r.source, f" ({r.doc_id})" if r.doc_id and r.doc_id != r.source else "", r.reason)
    return list(docs.values()), rejected
