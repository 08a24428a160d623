"""Training and evaluation data for the pair judge: labelled memory pairs from any HiCoMER dataset.

A gold decision judges one target against several memories at once (a group's team
memories, say); the judge works per pair, so each (target, reference) pair gets its own
label from the memories' ``topic`` (what the memory is about: a generator topic, a TimeQA
page, a SituatedQA question) and ``value``: another topic is neutral, the same topic and
value compatible, the same topic and another value a contradiction. On the generator's
streams this reproduces every gold relation (aggregated over a row's references as the
policy does); the real conversions label by subject, so a record about another subject
with the same attribute is the neutral it must be.

Sources (``judge_sources``): generated streams (several seeds), the TimeQA conversion's
``train`` pages and SituatedQA's train file. The ``dev`` halves of TimeQA's ``val`` pages and
SituatedQA's dev file are the held-out check (:mod:`memgraft.collab.data.splits`); the ``test``
halves are never read here, so nothing trained or tuned on this module's data has seen them.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from memgraft.collab.data import Dataset, Row

_PUNCT = str.maketrans("", "", string.punctuation)
SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
NEIGHBOURS = 4  # nearest other-topic memories per memory in a dense team (neighbour_pairs; off in training by default)


@dataclass(frozen=True)
class Pair:
    a: str  # the target (the earlier or the individual memory)
    b: str  # the reference
    label: int  # index into memgraft.collab.maintain.judgement.LABELS: 0 neutral, 1 compatible, 2 contradiction
    source: str = ""


def _value_key(value: object) -> str:
    return " ".join(str(value or "").lower().translate(_PUNCT).split())


def pair_label(a: Row, b: Row) -> int:
    if not a.get("topic") or a.get("topic") != b.get("topic"):
        return 0
    return 1 if _value_key(a.get("value")) == _value_key(b.get("value")) else 2


def dataset_pairs(data: Dataset, source: str = "", *, same_phrasing: int = 0, seed: int = 0) -> list[Pair]:
    """One pair per (gold target, reference), labelled by topic and value.

    ``same_phrasing``: also that many copies of each pair whose memories carry their phrase
    fields (the real conversions'), both sides re-rendered in one randomly drawn phrasing.
    Why: a stream written in one template (every record "Record from Y: the A of S is V")
    differs between two records only where they differ, and a judge must read that the
    same way in every phrasing; drawn from every template, it fits none of them.
    """
    from memgraft.collab.data.facts import CONFIRM_NOTES, RECORDS, STALE_NOTES, render

    templates = (*RECORDS, *STALE_NOTES, *CONFIRM_NOTES)
    rng = random.Random(f"same-phrasing:{source}:{seed}")
    memories = {m["memory_id"]: m for m in data.memories}
    out: list[Pair] = []
    for row in data.gold:
        target = memories.get(row["memory_id"])
        if target is None:
            continue
        for ref in row["against"]:
            other = memories.get(ref["memory_id"])
            if other is None:
                continue
            label = pair_label(target, other)
            out.append(Pair(row["original"], ref["content"], label, source))
            if target.get("phrase") and other.get("phrase"):
                for _ in range(same_phrasing):
                    t = rng.choice(templates)
                    out.append(Pair(render(target["phrase"], t), render(other["phrase"], t), label, source))
    return out


def judge_sources(split: str = "train", *, generated_seeds: Sequence[int] = (0, 1, 2, 3, 4),
                  data_dir: Path = SHARED_DATA) -> dict[str, Dataset]:
    """The datasets a judge trains on (``train``) or is checked on (``heldout``), by name.

    Generated streams: ``train`` seeds as given, ``heldout`` one further seed. The real
    conversions are read from ``data_dir`` when they are there."""
    from memgraft.collab.data import generator, situatedqa, timeqa

    out: dict[str, Dataset] = {}
    seeds = list(generated_seeds) if split == "train" else [max(generated_seeds, default=0) + 100]
    for seed in seeds:
        out[f"generated-{seed}"] = generator.generate(seed=seed)
    from memgraft.collab.data import splits

    # heldout: the dev halves only; the test halves (memgraft.collab.data.splits) are reported, never tuned on
    tq = data_dir / "timeqa-train" / "human_annotated_train.json"
    if tq.exists():
        if split == "train":
            out["timeqa-train"] = timeqa.convert(timeqa.select_split(timeqa.load_pages(tq), "train"))[0]
        else:
            out["timeqa-val-dev"] = timeqa.convert(splits.timeqa_pages("dev", tq))[0]
    sq = data_dir / "situatedqa-train" / ("temp.train.jsonl" if split == "train" else "temp.dev.jsonl")
    if sq.exists():
        rows = situatedqa.load_rows(sq) if split == "train" else splits.situatedqa_rows("dev", sq)
        out["situatedqa-train" if split == "train" else "situatedqa-dev-dev"] = situatedqa.convert(rows)[0]
    return out


def dense_sources(data_dir: Path = SHARED_DATA) -> dict[str, Dataset]:
    """The judge's own real training parts again, each whole source in one team: hundreds of subjects that share
    attributes, as a real team holds them (the 40-subject teams of :func:`judge_sources` seldom put two owners of
    two eggs side by side). Read for :func:`neighbour_pairs` only."""
    from memgraft.collab.data import situatedqa, timeqa

    out: dict[str, Dataset] = {}
    tq = data_dir / "timeqa-train" / "human_annotated_train.json"
    if tq.exists():
        out["timeqa-train-dense"] = timeqa.convert(timeqa.select_split(timeqa.load_pages(tq), "train"),
                                                   subjects_per_team=0)[0]
    sq = data_dir / "situatedqa-train" / "temp.train.jsonl"
    if sq.exists():
        out["situatedqa-train-dense"] = situatedqa.convert(situatedqa.load_rows(sq), subjects_per_team=0)[0]
    return out


def neighbour_pairs(data: Dataset, embedder, source: str = "", *, k: int = NEIGHBOURS, same_phrasing: int = 2,
                    native: bool = False, seed: int = 0) -> list[Pair]:
    """Each memory with its ``k`` nearest memories (by the embedder, in its own team) about another topic, neutral.

    Why: these are the pairs H_t brings a dense team's updater ("the head coach of Calcio Catania" beside "... of
    UD Las Palmas"; "most triples in a season" beside "most doubles"), and a judge that has seen few of them
    read them as contradictions. Each pair is re-rendered ``same_phrasing`` times, both sides in one drawn
    template, where only the subject or the attribute tells them apart; ``native``: also the pair as written.
    Native pairs are off by default: two templates side by side then say "neutral", and a judge trained on
    them read a record and a note in two new wordings as neutral (SituatedQA dev in prose: outdated memories
    left valid 35 -> 114 of 478)."""
    from memgraft.collab.data.facts import CONFIRM_NOTES, RECORDS, STALE_NOTES, render

    templates = (*RECORDS, *STALE_NOTES, *CONFIRM_NOTES)
    rng = random.Random(f"neighbours:{source}:{seed}")
    out: list[Pair] = []
    by_team: dict[str, list[Row]] = {}
    for m in data.memories:
        by_team.setdefault(m["team"], []).append(m)
    for members in by_team.values():
        texts = [m["original"] for m in members]
        vecs = np.asarray(embedder.encode(texts), np.float32)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
        topics = np.array([str(m.get("topic") or "") for m in members])
        for i, m in enumerate(members):
            sims = vecs @ vecs[i]
            sims[topics == topics[i]] = -np.inf
            for j in np.argsort(-sims)[:k]:
                if not np.isfinite(sims[j]):
                    break
                other = members[int(j)]
                if native:
                    out.append(Pair(m["original"], other["original"], 0, source))
                if m.get("phrase") and other.get("phrase"):
                    for _ in range(same_phrasing):
                        t = rng.choice(templates)
                        out.append(Pair(render(m["phrase"], t), render(other["phrase"], t), 0, source))
    return out


def all_pairs(datasets: dict[str, Dataset], same_phrasing: int = 2) -> list[Pair]:
    return [p for name, d in datasets.items() for p in dataset_pairs(d, name, same_phrasing=same_phrasing)]


def symmetric(pairs: Iterable[Pair]) -> list[Pair]:
    """Both orders of every pair: a relation does not depend on which text comes first."""
    out: list[Pair] = []
    for p in pairs:
        out += [p, Pair(p.b, p.a, p.label, p.source)]
    return out


def encode_pairs(pairs: Sequence[Pair], embedder) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of both sides, each distinct text encoded once (sorted by length: little padding)."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)}, key=len)
    vecs = dict(zip(texts, np.asarray(embedder.encode(texts), np.float32))) if texts else {}
    dim = int(embedder.dim)
    u = np.stack([vecs[p.a] for p in pairs]) if pairs else np.zeros((0, dim), np.float32)
    v = np.stack([vecs[p.b] for p in pairs]) if pairs else np.zeros((0, dim), np.float32)
    return u, v
