"""PRELUDE (Yu et al., 2025): is a character's prequel consistent with the book it leads into?

One record is one prequel. The published dataset (Hugging Face ``ttchungc/PRELUDE``) is Parquet,
one file per split (``public``, ``subset``, ``all``); JSONL, a JSON list and CSV are read too. The
fields a record needs:

    id        the instance's id (default: its row number in the file)
    book      the book's title
    char      the character the prequel is about
    prequel   the prequel's text
    label     "consistent" or "contradict"

The dataset card names its splits but not its columns, and nothing here could be checked against
the real files offline, so each field is looked up under a few names (``FIELDS``) and any of them
can be named outright (``columns={"prequel": "content"}``, or ``--column prequel=content``). A
field that is not found is an error listing the columns the file has. Every other column passes
through (a ``type`` column becomes the question kind the eval splits hyperedge sizes by).

The dataset is bilingual (English and Chinese books). Each question says its ``language``: a
``language``/``lang`` column's value where the file has one, else the prequel's script (mostly CJK
ideographs: Chinese). ``--language en`` keeps one language, so a graph of the English books is
asked only about them.

Each record becomes one yes/no question, "is this prequel consistent with the book?", put as a
claim so the NoCha claim reader and judge (``memgraft.eval.judges``) read the system's verdict:
``label`` is the expected verdict (True: consistent), ``gold`` keeps the dataset's word. The books
themselves are the documents the graph is built from; they are not part of these records.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from memgraft.eval.records import DatasetError, extra_fields, read_records

FIELDS: dict[str, tuple[str, ...]] = {
    "id": ("id", "qid", "instance_id"),
    "book": ("book", "book_name", "book_title", "title"),
    "char": ("char", "character", "character_name"),
    "prequel": ("prequel", "content", "backstory"),
    "label": ("label", "answer", "gold"),
    "language": ("language", "lang"),
}
OPTIONAL = frozenset({"id", "language"})  # id: the row number; language: read from the prequel's script
LANGUAGES = {"en": ("en", "eng", "english"), "zh": ("zh", "zho", "chi", "chinese", "cn", "zh-cn", "zh-hans", "中文")}
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CONSISTENT = frozenset({"consistent", "consistency", "true"})
CONTRADICT = frozenset({"contradict", "contradicts", "contradictory", "contradiction", "inconsistent", "false"})


class PreludeError(DatasetError):
    pass


def read_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a Parquet, CSV, JSONL or JSON-list file, as dicts."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        yield from pq.read_table(path).to_pylist()
    elif suffix == ".csv":
        with path.open(newline="", encoding="utf-8-sig") as f:  # a spreadsheet's BOM is not part of a column name
            yield from csv.DictReader(f)
    else:
        yield from read_records(path)


def read_label(value: Any, where: str) -> bool:
    """True for a consistent prequel, False for a contradicting one; anything else is an error
    (a 0/1 label is refused: which of the two is 1 is not ours to guess)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower() if isinstance(value, str) else None
    if word in CONSISTENT:
        return True
    if word in CONTRADICT:
        return False
    raise PreludeError(f"{where}: label {value!r} is neither 'consistent' nor 'contradict'")


def resolve_columns(present: list[str], columns: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Field -> the column it is read from (``id`` may be None: row numbers are used)."""
    columns = dict(columns or {})
    unknown = set(columns) - set(FIELDS)
    if unknown:
        raise PreludeError(f"unknown field(s) {', '.join(sorted(unknown))}; fields: {', '.join(FIELDS)}")
    out: dict[str, str | None] = {}
    for field, names in FIELDS.items():
        if field in columns:
            if columns[field] not in present:
                raise PreludeError(f"column {columns[field]!r} (for {field}) is not in the file; "
                                   f"it has {', '.join(present)}")
            out[field] = columns[field]
            continue
        out[field] = next((n for n in names if n in present), None)
        if out[field] is None and field not in OPTIONAL:
            raise PreludeError(f"no column for {field} (looked for {', '.join(names)}); the file has "
                               f"{', '.join(present)}: name it with --column {field}=COLUMN")
    return out


def prelude_question(prequel: str, char: str, book: str) -> str:
    """What the system is asked about one prequel."""
    return (f"Is the following claim true or false? Begin your answer with True or False, then explain briefly.\n"
            f"Claim: {prelude_claim(char, book)}\nPrequel: {prequel}")


def prelude_claim(char: str, book: str) -> str:
    return (f"This prequel, a story of {char}'s life before the book {book!r} begins, is consistent with the "
            f"book's canonical story.")


def language_code(value: str) -> str | None:
    """"en" or "zh" for the names PRELUDE's two languages go by; None for anything else."""
    v = value.strip().lower()
    return next((code for code, names in LANGUAGES.items() if v in names), None)


def text_language(text: str) -> str:
    """"zh" when at least 30% of the text's letters are CJK ideographs, else "en": PRELUDE has only the two."""
    letters = sum(ch.isalpha() for ch in text)
    return "zh" if letters and len(_CJK.findall(text)) / letters >= 0.3 else "en"


def prelude_questions(path: str | Path, columns: Mapping[str, str] | None = None,
                      language: str | None = None) -> list[dict[str, Any]]:
    """One question per record; ``language`` ("en"/"zh", or "english"/"chinese") keeps only that language's
    records, read from a language column where the file has one, else from the prequel's script."""
    want = language_code(language) if language else None
    if language and want is None:
        raise PreludeError(f"language {language!r}: PRELUDE's are en (English) and zh (Chinese)")
    rows = list(read_rows(path))
    if not rows:
        raise PreludeError(f"{path} holds no records")
    col = resolve_columns(list(rows[0]), columns)
    used = {c for c in col.values() if c}
    out, seen, found = [], set(), set()
    for n, r in enumerate(rows, 1):
        where = f"{path} record {n}"
        missing = [f for f, c in col.items() if c and (r.get(c) is None or str(r.get(c)).strip() == "")]
        if missing:
            raise PreludeError(f"{where}: empty {', '.join(missing)}")
        qid = str(r[col["id"]]) if col["id"] else str(n - 1)
        if qid in seen:
            raise PreludeError(f"{where}: id {qid!r} repeats")
        seen.add(qid)
        book, char, prequel = (str(r[col[f]]).strip() for f in ("book", "char", "prequel"))  # type: ignore[index]
        lang = str(r[col["language"]]) if col["language"] else text_language(prequel)
        lang = language_code(lang) or lang.strip().lower()
        label = read_label(r[col["label"]], where)
        found.add(lang)
        if want and lang != want:
            continue
        extra = extra_fields(r, used | {"question", "claim", "label", "gold", "language"})
        out.append({"id": qid, "question": prelude_question(prequel, char, book), "claim": prelude_claim(char, book),
                    "label": label, "gold": str(r[col["label"]]), "book": book, "char": char, "language": lang,
                    **extra})
    if not out:
        raise PreludeError(f"{path} holds no {want} records (its languages: {', '.join(sorted(found))})")
    return out


def parse_columns(pairs: list[str]) -> dict[str, str]:
    """``["prequel=content", ...]`` -> ``{"prequel": "content"}``."""
    out = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise PreludeError(f"--column {pair!r}: expected FIELD=COLUMN")
        out[field.strip()] = column.strip()
    return out
