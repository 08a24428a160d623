"""Does a dense team's ingest slow down as its bank grows? groups/s at a small and a large bank, in one run.

    python bench/ingest_growth.py [--sizes 500,10000] [--probe-groups 60] [--set k=v ...]

For each size N, a fresh SQLite bank gets one team of N earlier memories (the generated
stream's, relabelled into one team and written as they are, no maintenance: filling is not
what is measured), then the same probe groups (the first ``--probe-groups`` groups of the
TimeQA conversion with all its subjects in one team) go through the default updater: H_t
search over the whole team, the judge, the write. groups/s of the probes at each size is
printed with its ratio to the smallest size's. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def filler_groups(n: int, team: str, seed: int = 0) -> list[Any]:
    """``n`` memories of the generated stream in one team, dated before any probe (year 1)."""
    from memgraft.collab.data.generator import generate
    from memgraft.collab.types import MemoryGroup

    teams = 8
    out, count = [], 0
    while count < n:
        data = generate(seed=seed, teams=teams)
        for i, g in enumerate(data.groups):
            if count >= n:
                break
            memories = [dict(m, memory_id=f"fill{seed}-{m['memory_id']}") for m in g["memories"]][: n - count]
            count += len(memories)
            at = datetime(1, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=len(out))
            out.append(MemoryGroup.model_validate({"team": team, "group_id": f"fill{seed}-{i}-{g['group_id']}",
                                                   "time": at, "memories": memories}))
        seed += 1
    return out


def probe_groups(count: int, team: str) -> list[Any]:
    from memgraft.collab.data import timeqa
    from memgraft.collab.evaluate.harness import stream_groups

    pages = timeqa.load_pages(SHARED / "timeqa-train" / "human_annotated_train.json")
    data = timeqa.convert(timeqa.select_split(pages, "train"), subjects_per_team=0)[0]
    groups = stream_groups(data)[:count]
    return [g.model_copy(update={"team": team}) for g in groups]


def measure(size: int, probes: list[Any], settings: Any, embedder: Any, workdir: Path) -> dict[str, Any]:
    from memgraft.collab.bank import open_bank
    from memgraft.collab.maintain.policies import make_policy
    from memgraft.collab.maintain.updater import MemoEmbedder, Updater

    bank = open_bank(workdir / f"bank-{size}.sqlite", MemoEmbedder(embedder))
    t0 = time.perf_counter()
    for g in filler_groups(size, probes[0].team):
        bank.apply_group(g, [])
    filled = time.perf_counter() - t0
    updater = Updater(bank, make_policy(settings, embedder=embedder), settings.hicomer)
    embedder.encode([m.content for g in probes for m in g.memories])  # the probes' own texts: not what is timed
    t0 = time.perf_counter()
    decisions = sum(len(updater.apply(g).decisions) for g in probes)
    seconds = time.perf_counter() - t0
    return {"memories_before": size, "fill_s": round(filled, 1), "probe_groups": len(probes),
            "probe_s": round(seconds, 2), "groups_per_s": len(probes) / seconds, "decisions": decisions}


def warm(probes: list[Any], settings: Any, embedder: Any, workdir: Path) -> None:
    """A few probes through a throwaway bank first: the models' first calls (loading the judge's encoder, its
    folded copy) must not be timed as the first size's ingest."""
    from memgraft.collab.bank import open_bank
    from memgraft.collab.maintain.policies import make_policy
    from memgraft.collab.maintain.updater import MemoEmbedder, Updater

    bank = open_bank(workdir / "warm.sqlite", MemoEmbedder(embedder))
    updater = Updater(bank, make_policy(settings, embedder=embedder), settings.hicomer)
    for g in probes[:5]:
        updater.apply(g)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from memgraft.config import load_settings
    from memgraft.models.embedder import load_embedder

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="500,10000", help="earlier memories in the team before the probes")
    p.add_argument("--probe-groups", type=int, default=60)
    p.add_argument("--profile", default="local")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    settings = load_settings(a.profile, a.overrides)
    embedder = load_embedder(settings)
    probes = probe_groups(a.probe_groups, "dense")
    workdir = a.out or Path(tempfile.mkdtemp(prefix="ingest-growth-"))
    workdir.mkdir(parents=True, exist_ok=True)
    warm(probes, settings, embedder, workdir)
    rows = [measure(int(n), probes, settings, embedder, workdir) for n in a.sizes.split(",")]
    base = rows[0]["groups_per_s"]
    print(f"{'memories in the team':>22} {'probe groups/s':>15} {'ratio to first':>15} {'decisions':>10}")
    for r in rows:
        r["ratio"] = r["groups_per_s"] / base
        print(f"{r['memories_before']:>22} {r['groups_per_s']:>15.2f} {r['ratio']:>15.2f} {r['decisions']:>10}")
    (workdir / "bench_ingest_growth.json").write_text(json.dumps(rows, indent=1))
    print(f"written to {workdir / 'bench_ingest_growth.json'}")
    return {"rows": rows}


if __name__ == "__main__":
    main()
