"""The judge's dense-team negatives: every memory beside its nearest memories about another topic, neutral."""

from __future__ import annotations

import numpy as np

from memgraft.collab.data import splits, timeqa
from memgraft.collab.train.judge_data import neighbour_pairs
from tests.doubles import HashEmbedder


def test_neighbour_pairs_are_the_nearest_memories_about_another_topic():
    data = timeqa.convert(splits.timeqa_pages("train", limit=12), subjects_per_team=0)[0]
    embedder = HashEmbedder()
    native = [p for p in neighbour_pairs(data, embedder, "tq", k=2, same_phrasing=0, native=True)]
    topic = {m["original"]: m["topic"] for m in data.memories}
    assert native and all(p.label == 0 and topic[p.a] != topic[p.b] for p in native)
    texts = [m["original"] for m in data.memories]
    vecs = np.asarray(embedder.encode(texts), np.float32)
    others = [j for j, m in enumerate(data.memories) if m["topic"] != data.memories[0]["topic"]]
    nearest = sorted(others, key=lambda j: -float(vecs[j] @ vecs[0]))[:2]
    assert [p.b for p in native[:2]] == [texts[j] for j in nearest]  # the first memory's pairs come first
    rendered = neighbour_pairs(data, embedder, "tq", k=2, same_phrasing=2)
    assert len(rendered) == 2 * len(native) and all(p.label == 0 for p in rendered)
