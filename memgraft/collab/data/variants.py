"""The real-team variants of the real conversions: dense, prose, noisy, two teams; and a CLI that writes one.

Why: the converters put 40 subjects in a team, in the project's own templates, each subject
in one team. A real team's memory holds hundreds of subjects sharing attributes, written by
people, with typos and shortened names, and other teams hold the same subjects with their
own values. Each variant is one of those shapes, on a held-out half (:mod:`.splits`), built
the same way for TimeQA and SituatedQA:

``dense``      every subject of the split in ONE team (``facts.build(subjects_per_team=0)``).
``prose``      ``dense`` with records in prose, the date inside the sentence, and informal notes
               (:func:`memgraft.collab.data.phrasing.prose`).
``noisy``      ``dense`` with ~30% of memories given a typo or an extra clause, and names shortened
               (surname, initials, no parenthetical, "the club" in a note; :func:`.phrasing.noisy`).
``two-teams``  two dense teams holding the same subjects: team ``b`` has its own timeline for each
               subject, the values of another subject of the same attribute on the subject's own
               start times, so one team's record never has a reason to touch the other's memories.

The hand-written team decisions (:mod:`.decisions`) are ``--source decisions``.

    python -m memgraft.collab.data.variants --source timeqa --split test --variant dense --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from memgraft.collab.data import Dataset, write_converted
from memgraft.collab.data import phrasing, splits
from memgraft.collab.data.facts import Timeline, build, normalise_values

SOURCES = ("timeqa", "situatedqa", "decisions")
VARIANTS = ("dense", "prose", "noisy", "two-teams")


def source_timelines(source: str, split: str, limit: int | None = None) -> tuple[list[Timeline], dict[str, int], str]:
    """The timelines of ``source``'s ``split`` half, the conversion's counts and the records' author."""
    if source == "timeqa":
        from memgraft.collab.data import timeqa

        conv = timeqa.Converter()
        for n, page in enumerate(splits.timeqa_pages(split, limit=limit)):
            conv.page(n, page)
        return conv.timelines, dict(conv.counts), timeqa.AUTHOR
    if source == "situatedqa":
        from memgraft.collab.data import situatedqa

        tally: Counter[str] = Counter()
        lines = situatedqa.timelines(splits.situatedqa_rows(split, limit=limit), counts=tally)
        return lines, dict(tally), situatedqa.AUTHOR
    raise ValueError(f"source must be timeqa or situatedqa here, got {source!r}")


def other_values(lines: Sequence[Timeline]) -> list[Timeline]:
    """Each subject again with another subject's values (the next one sharing its attribute, in subject order)
    on its own start times; its as-of questions asked again with the answers of that timeline."""
    by_attr: dict[Any, list[Timeline]] = {}
    for line in sorted(lines, key=lambda x: x.subject):
        by_attr.setdefault(line.extra.get("attribute"), []).append(line)
    out = []
    for group in by_attr.values():
        for i, line in enumerate(group):
            donor = normalise_values(group[(i + 1) % len(group)].values)
            own = normalise_values(line.values)
            shift = 1 if group[(i + 1) % len(group)] is line else 0  # alone: its own values, rotated
            values = [(start, donor[(k + shift) % len(donor)][1]) for k, (start, _) in enumerate(own)]
            held = normalise_values(values)
            asked = []
            for text, t, _ in line.asked:
                before = [a for start, a in held if start <= t]
                if before:
                    asked.append((text, t, before[-1]))
            out.append(Timeline(line.subject, line.question, values, asked, line.name, dict(line.wording),
                                {**line.extra, "values_from": group[(i + 1) % len(group)].subject}))
    return out


def merge(parts: Sequence[Dataset], info: dict[str, Any]) -> Dataset:
    """Datasets of disjoint teams as one (each team's groups stay in time order)."""
    counts: Counter[str] = Counter()
    for d in parts:
        counts.update(d.info.get("counts", {}))
    out = Dataset(groups=[g for d in parts for g in d.groups], questions=[q for d in parts for q in d.questions],
                  gold=[r for d in parts for r in d.gold], memories=[m for d in parts for m in d.memories],
                  info=dict(info))  # fmt: skip
    counts.update({k: v for k, v in out.counts().items() if k in ("teams", "groups", "memories")})
    out.info["counts"] = dict(sorted(counts.items()))
    return out


def build_variant(source: str, split: str = "test", variant: str = "dense", *, seed: int = 0,
                  limit: int | None = None) -> Dataset:  # fmt: skip
    """One variant of one source's split; ``limit``: the first N pages (TimeQA) or question ids (SituatedQA)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if source == "decisions":
        from memgraft.collab.data import decisions

        return decisions.build(split, seed=seed)
    lines, counts, author = source_timelines(source, split, limit)
    info = {"source": source, "split": split, "variant": variant, "seed": seed}
    if variant == "two-teams":
        a = build(lines, source=f"{source}-a", author=author, subjects_per_team=0, seed=seed, counts=counts)
        b = build(other_values(lines), source=f"{source}-b", author=author, subjects_per_team=0, seed=seed)
        return merge([a, b], info)
    data = build(lines, source=source, author=author, subjects_per_team=0, seed=seed, counts=counts)
    data.info.update(info)
    if variant == "prose":
        data = phrasing.prose(data, seed)
    elif variant == "noisy":
        data = phrasing.noisy(data, seed)
    return data


def title(source: str, split: str, variant: str, data: Dataset) -> str:
    """A row's name that says the source, the split and the variant: "TimeQA val-test, dense (one team of 38 subjects)"."""
    subjects = len({m.get("subject") or m.get("topic") for m in data.memories})
    teams = len({g["team"] for g in data.groups})
    where = {"timeqa": f"TimeQA val-{split}" if split != "train" else "TimeQA train (the judge's own; not a result)",
             "situatedqa": f"SituatedQA dev-{split}" if split != "train" else "SituatedQA train (the judge's own)",
             "decisions": f"team decisions ({split})"}[source]  # fmt: skip
    if source == "decisions":
        return f"{where}, {teams} teams, {subjects} decision threads"
    shape = {"dense": f"one team of {subjects} subjects", "prose": f"prose and informal notes, one team of {subjects}",
             "noisy": f"typos, clauses, short names; one team of {subjects}",
             "two-teams": f"the same {subjects} subjects in {teams} teams, other values"}[variant]
    return f"{where}, {variant} ({shape})"


ROWS = (*VARIANTS, "decisions")  # what ``python -m memgraft.eval collab --variant`` may name


def real_team_rows(split: str = "test", names: Sequence[str] = ROWS, sources: Sequence[str] = ("timeqa", "situatedqa"),
                   *, pages: int | None = None, questions: int | None = None,
                   seed: int = 0) -> list[tuple[str, Dataset]]:  # fmt: skip
    """The eval's real-team rows: each variant of each source on ``split``, then the decisions set; ``pages`` /
    ``questions`` cap the TimeQA pages / SituatedQA question ids read (a bounded check)."""
    unknown = [n for n in names if n not in ROWS] + [s for s in sources if s not in SOURCES[:2]]
    if unknown:
        raise ValueError(f"unknown real-team rows {unknown}; variants: {', '.join(ROWS)}; sources: timeqa, situatedqa")
    out = []
    for source in sources:
        for name in (n for n in names if n in VARIANTS):
            data = build_variant(source, split, name, seed=seed, limit=pages if source == "timeqa" else questions)
            out.append((title(source, split, name, data), data))
    if "decisions" in names:
        data = build_variant("decisions", split, seed=seed)
        out.append((title("decisions", split, "dense", data), data))
    for _, data in out:
        data.info["real_team"] = True  # the eval scores every team's questions (no team is held out to train)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memgraft.collab.data.variants", description=__doc__.split("\n")[0])
    p.add_argument("--source", choices=SOURCES, required=True)
    p.add_argument("--split", choices=splits.SPLITS, default="test",
                   help="dev (develop on it) or test (report, never tune); train: the judge's own part")
    p.add_argument("--variant", choices=VARIANTS, default="dense", help="ignored for --source decisions")
    p.add_argument("--out", required=True, help="folder for stream/questions/gold/memories .jsonl")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None, help="first N pages (TimeQA) or question ids (SituatedQA)")
    a = p.parse_args(argv)
    try:
        data = build_variant(a.source, a.split, a.variant, seed=a.seed, limit=a.limit)
    except (OSError, ValueError) as err:
        print(f"variants: {err}", file=sys.stderr)
        return 2
    counts = {**data.info.get("counts", {}), **data.counts()}
    print(title(a.source, a.split, a.variant, data), file=sys.stderr)
    write_converted(data, a.out, counts)
    (Path(a.out) / "info.json").write_text(json.dumps(data.info, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
