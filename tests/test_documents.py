"""Every bad input is rejected with its reason; good documents in the same input still pass."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memgraft.text.documents import list_input_files, read_files


def _read(path: Path, max_mb: float = 20.0):
    root, files = list_input_files(path)
    return read_files(files, root, max_mb)


def test_each_supported_format(tmp_path: Path):
    (tmp_path / "a.txt").write_text("Plain text document.")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# Heading\nMarkdown body.")
    (tmp_path / "c.jsonl").write_text('{"id": "c1", "text": "one"}\n{"doc_id": "c2", "text": "two", "title": "T"}\n')
    (tmp_path / "d.json").write_text(json.dumps([{"title": "Same", "text": "x"}, {"title": "Same", "text": "y"}]))
    (tmp_path / "e.json").write_text(json.dumps({"Alpha": ["Sentence one. ", "Sentence two."]}))
    pq.write_table(pa.table({"text": ["from parquet"], "doc_id": ["p1"]}), tmp_path / "f.parquet")
    docs, rejected = _read(tmp_path)
    assert rejected == []
    by_id = {d.doc_id: d for d in docs}
    assert set(by_id) == {"a.txt", "sub/b.md", "c1", "c2", "Same", "Same #2", "Alpha", "p1"}
    assert by_id["c2"].text == "T\n\ntwo" and by_id["Alpha"].text == "Alpha\n\nSentence one. Sentence two."


def test_a_directory_of_mixed_bad_files(tmp_path: Path):
    (tmp_path / "good.txt").write_text("This one is fine.")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.md").write_text("   \n\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "notext.jsonl").write_text('{"id": "n1", "body": "no text field"}\n{"id": "n2", "text": "kept"}\n{broken\n')
    (tmp_path / "broken.json").write_text("[{]")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "big.txt").write_text("x" * 3_000_000)  # 3 MB against a 1 MB limit
    docs, rejected = _read(tmp_path, max_mb=1.0)
    assert sorted(d.doc_id for d in docs) == ["good.txt", "n2"]
    reasons = {r.source: r.reason for r in rejected}
    assert reasons["empty.txt"] == "empty file"
    assert reasons["blank.md"] == "empty document"
    assert reasons["latin1.txt"].startswith("undecodable bytes: not UTF-8 at byte 3")
    assert reasons["notext.jsonl[0]"] == "record has no 'text' field"
    assert reasons["notext.jsonl:3"].startswith("invalid JSON")
    assert reasons["broken.json"].startswith("invalid JSON at line 1")
    assert reasons["image.png"].startswith("unsupported file type '.png'")
    assert "over the limit" in reasons["big.txt"]


def test_fifty_megabyte_document_is_rejected_not_read(tmp_path: Path):
    big = tmp_path / "huge.txt"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: costs no disk
    docs, rejected = _read(big)
    assert docs == [] and len(rejected) == 1 and "52.4 MB" in rejected[0].reason


def test_duplicate_doc_ids_keep_the_first(tmp_path: Path):
    (tmp_path / "a.jsonl").write_text('{"id": "x", "text": "first"}\n')
    (tmp_path / "b.jsonl").write_text('{"id": "x", "text": "second"}\n')
    docs, rejected = _read(tmp_path)
    assert [d.text for d in docs] == ["first"]
    assert rejected[0].reason.startswith("duplicate doc_id")
