"""Datasets for HiCoMER: memory streams with gold maintenance labels and questions.

The paper's datasets are not public, so the project builds its own: a seeded synthetic
generator (:mod:`.generator`) and a converter of real TimeQA pages (:mod:`.timeqa`). Both
write one folder of four JSONL files, so the bank, the benchmark and the updater's
training read every dataset the same way:

``stream.jsonl`` (DESIGN.md, "memory stream in"): one time-aligned group per line,
    ``{"team", "group_id", "time", "memories": [{"memory_id", "type", "author",
    "content"}]}``, groups in time order per team. Nothing else is in it, so an updater
    that reads it cannot see a label.
``questions.jsonl`` (DESIGN.md, "memory questions in"): ``{"id", "team", "question",
    "time", "valid", "outdated", "answer"}`` plus ``qtype`` and source-specific fields.
    ``time`` is the as-of time: ``valid`` holds the question's relevant memories that are
    valid then, ``outdated`` its relevant memories already outdated then.
``gold.jsonl``: one gold maintenance decision per line, in stream order, for the updater's
    SFT and GRPO data: the group being applied, the target memory, the ``level``
    ("intra": an individual memory of that group against its team memories; "inter": an
    earlier memory against the group), the memories it is judged against (ids, types,
    texts), ``relation``, ``action``, the gold ``maintained`` text and ``valid`` (the
    target's validity after the decision).
``memories.jsonl``: one line per memory, its whole life: written at ``time``, valid until
    ``outdated_at`` (null: still valid at the end), ``superseded_by`` the memory that
    outdated it, and its final maintained text.

Times are ISO-8601 ``YYYY-MM-DDTHH:MM:SS`` (UTC, no offset, four-digit years) in every
file, so they compare correctly as strings. A memory is valid at time ``t`` when
``time <= t < outdated_at``: outdated from the moment the superseding group is applied.

Revision rule, shared by both sources: a revised memory keeps its original words behind a
prefix naming when and by which memory (its id) it was superseded (:func:`revised_text`). The rewrite is
minimal, deterministic and reversible, and the bank keeps the original text anyway.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

STREAM_FILE = "stream.jsonl"
QUESTIONS_FILE = "questions.jsonl"
GOLD_FILE = "gold.jsonl"
MEMORIES_FILE = "memories.jsonl"

RELATIONS = ("compatible", "neutral", "contradiction")
ACTIONS = ("keep", "revise")
LEVELS = ("intra", "inter")

Row = dict[str, Any]


def revised_text(original: str, since: str, superseded_by: str) -> str:
    """The gold maintained text of a revised memory: ``[Outdated since <time>; superseded
    by <memory id>] <original>``. Prefixing rather than rewriting keeps the edit minimal
    (the GRPO reward asks for minimal revisions). The superseding memory is named by id,
    never pasted: a stale memory that carried the newer value's words outranked the
    current memory itself for "what is the current X?" on real data (issue 11). Readers
    follow the id (``history``, the answer's evidence)."""
    return f"[Outdated since {since}; superseded by {superseded_by}] {original}"


_OUTDATED = re.compile(r"\[Outdated since [^\]]*\] ")


def unmarked(text: str) -> str:
    """``text`` without the outdated labels :func:`revised_text` put before it: what the memory says. A revision
    that only adds a label says the same, so the bank keeps its vector (no second embedding)."""
    while (m := _OUTDATED.match(text)) is not None:
        text = text[m.end():]
    return text


def rewords(before: str, after: str) -> bool:
    """A revision from ``before`` to ``after`` changes what the memory says, not only its label: it needs a vector."""
    return unmarked(after) != unmarked(before)


@dataclass
class MemoryState:
    """One memory and its validity over time (a ``memories.jsonl`` line)."""

    memory_id: str
    team: str
    group_id: str
    time: str
    type: str  # "team" | "individual"
    author: str
    content: str
    kind: str  # decision, protocol, instruction, log, observation, attempt, fact, ...
    topic: str | None = None
    value: str | None = None
    maintained: str = ""
    outdated_at: str | None = None
    superseded_by: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.maintained:
            self.maintained = self.content

    def valid_at(self, time: str) -> bool:
        """Written by ``time`` and not yet outdated at it."""
        return self.time <= time and (self.outdated_at is None or time < self.outdated_at)

    def outdated_by(self, time: str) -> bool:
        """Written and already outdated at ``time``."""
        return self.outdated_at is not None and self.outdated_at <= time

    def stream_row(self) -> Row:
        return {"memory_id": self.memory_id, "type": self.type, "author": self.author, "content": self.content}

    def to_row(self) -> Row:
        row: Row = {
            "memory_id": self.memory_id,
            "team": self.team,
            "group_id": self.group_id,
            "time": self.time,
            "type": self.type,
            "kind": self.kind,
            "author": self.author,
            "topic": self.topic,
            "value": self.value,
            "original": self.content,
            "maintained": self.maintained,
            "outdated_at": self.outdated_at,
            "superseded_by": self.superseded_by,
        }
        row.update(self.extra)
        return row


class Ledger:
    """Builds a dataset group by group and keeps the stream, the gold decisions and every
    memory's state in step, so a label can never point at a memory the stream lacks."""

    def __init__(self) -> None:
        self.groups: list[Row] = []
        self.gold: list[Row] = []
        self.states: dict[str, MemoryState] = {}
        self._by_team: dict[str, list[MemoryState]] = {}

    def add_group(self, team: str, group_id: str, time: str, memories: Sequence[MemoryState]) -> None:
        for m in memories:
            if m.memory_id in self.states:
                raise ValueError(f"duplicate memory id {m.memory_id}")
            if (m.team, m.group_id, m.time) != (team, group_id, time):
                raise ValueError(f"memory {m.memory_id} does not belong to group {group_id}")
            self.states[m.memory_id] = m
            self._by_team.setdefault(team, []).append(m)
        self.groups.append(
            {"team": team, "group_id": group_id, "time": time, "memories": [m.stream_row() for m in memories]}
        )

    def decide(
        self,
        target_id: str,
        group_id: str,
        time: str,
        level: str,
        against: Sequence[str],
        relation: str,
        action: str,
        superseded_by: str | None = None,
    ) -> Row:
        """Record a gold decision on ``target_id`` while applying group ``group_id``; a
        revision outdates the target from ``time`` on and rewrites its maintained text."""
        if relation not in RELATIONS or action not in ACTIONS or level not in LEVELS:
            raise ValueError(f"bad labels {level}/{relation}/{action}")
        target = self.states[target_id]
        if not target.valid_at(time):
            raise ValueError(f"{target_id} is not valid at {time}; nothing to maintain")
        context = [self.states[a] for a in against]
        if action == "revise":
            by = self.states[superseded_by or against[0]]
            target.maintained = revised_text(target.content, time, by.memory_id)
            target.outdated_at = time
            target.superseded_by = by.memory_id
        row: Row = {
            "team": target.team,
            "group_id": group_id,
            "time": time,
            "level": level,
            "memory_id": target_id,
            "memory_type": target.type,
            "memory_time": target.time,
            "original": target.content,
            "against": [{"memory_id": c.memory_id, "type": c.type, "content": c.content} for c in context],
            "relation": relation,
            "action": action,
            "maintained": target.maintained if action == "revise" else target.content,
            "valid": action == "keep",
        }
        self.gold.append(row)
        return row

    def team_states(self, team: str) -> list[MemoryState]:
        """A team's memories in the order they were written."""
        return list(self._by_team.get(team, []))

    def dataset(self, questions: list[Row], info: dict[str, Any] | None = None) -> "Dataset":
        return Dataset(
            groups=self.groups,
            questions=questions,
            gold=self.gold,
            memories=[m.to_row() for m in self.states.values()],
            info=dict(info or {}),
        )


@dataclass
class Dataset:
    """The four files' rows, in the order they are written."""

    groups: list[Row]
    questions: list[Row]
    gold: list[Row]
    memories: list[Row]
    info: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {
            "teams": len({g["team"] for g in self.groups}),
            "groups": len(self.groups),
            "memories": len(self.memories),
            "team_memories": sum(m["type"] == "team" for m in self.memories),
            "outdated_memories": sum(m["outdated_at"] is not None for m in self.memories),
            "gold_decisions": len(self.gold),
            "revisions": sum(g["action"] == "revise" for g in self.gold),
            "questions": len(self.questions),
        }

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "stream": out / STREAM_FILE,
            "questions": out / QUESTIONS_FILE,
            "gold": out / GOLD_FILE,
            "memories": out / MEMORIES_FILE,
        }
        write_stream(paths["stream"], self.groups)
        write_jsonl(paths["questions"], self.questions)
        write_jsonl(paths["gold"], self.gold)
        write_jsonl(paths["memories"], self.memories)
        return paths


def write_converted(data: "Dataset", out: str | Path, counts: dict[str, int]) -> None:
    """A converter CLI's output: the four files, ``report.json`` with the counts, and both printed."""
    paths = data.write(out)
    (Path(out) / "report.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"counts": counts, "files": {k: str(v) for k, v in paths.items()}}, indent=2))


def write_jsonl(path: str | Path, rows: Iterable[Row]) -> int:
    """One JSON object per line, UTF-8, ``\\n`` endings, keys in insertion order: the same
    rows always give the same bytes."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_stream(path: str | Path, groups: Iterable[Row]) -> int:
    """Write groups as a memory stream (DESIGN.md), checking each has the required fields."""
    required = ("team", "group_id", "time", "memories")
    checked = []
    for g in groups:
        missing = [k for k in required if k not in g]
        if missing:
            raise ValueError(f"group {g.get('group_id')!r} lacks {missing}")
        checked.append(g)
    return write_jsonl(path, checked)


def read_jsonl(path: str | Path) -> Iterator[Row]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_dataset(folder: str | Path) -> Dataset:
    """Read a dataset folder written by :meth:`Dataset.write` (``gold`` and ``memories`` may be absent)."""
    root = Path(folder)
    if not (root / STREAM_FILE).exists():
        raise FileNotFoundError(f"{root}: no {STREAM_FILE}; expected a dataset folder (stream, questions, gold, memories)")

    def rows(name: str) -> list[Row]:
        return list(read_jsonl(root / name)) if (root / name).exists() else []

    return Dataset(groups=rows(STREAM_FILE), questions=rows(QUESTIONS_FILE), gold=rows(GOLD_FILE),
                   memories=rows(MEMORIES_FILE), info={"source": str(root)})
