"""GraphStore searches over a built slice of MuSiQue."""

from __future__ import annotations

import pytest

from memgraft.graph.folder import GraphFolderError
from memgraft.graph.store import GraphStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graph_dir(slice_graph):
    return slice_graph[0]


@pytest.fixture(scope="module")
def store(graph_dir, embedder):
    return GraphStore.load(str(graph_dir), embedder)


def test_chunk_search_finds_the_passage(store):
    hits = store.search_chunks("Journal of Psychotherapy Integration", k=3)
    assert store.chunk(hits[0].id)["doc_id"] == "Journal of Psychotherapy Integration"
    assert hits[0].score >= hits[1].score >= hits[2].score


def test_entity_search_with_exclusion(store):
    top = store.search_entities("Journal of Psychotherapy Integration", k=5)
    assert store.entity(top[0].id)["name"] == "Journal of Psychotherapy Integration"
    again = store.search_entities("Journal of Psychotherapy Integration", k=5, exclude={top[0].id})
    assert top[0].id not in {h.id for h in again} and len(again) == 5
    assert [h.id for h in again[:4]] == [h.id for h in top[1:5]]


def test_relation_search_and_graph_walks(store):
    ent = store.search_entities("Journal of Psychotherapy Integration", k=1)[0].id
    rels = store.top_relations(ent, k=5)
    assert 0 < len(rels) <= 5 and all(ent in (r["source_id"], r["target_id"]) for r in rels)
    assert [r["weight"] for r in rels] == sorted((r["weight"] for r in rels), reverse=True)
    hop1 = {e for e, d in store.neighbours([ent], hops=1).items() if d == 1}
    assert hop1 == {r["target_id"] if r["source_id"] == ent else r["source_id"] for r in store.top_relations(ent, k=10_000)}
    two = store.neighbours([ent], hops=2)
    assert set(two) >= hop1 and two[ent] == 0 and max(two.values()) <= 2
    chunks = store.entity_chunks(ent)
    assert all("Psychotherapy Integration" in store.chunk(c)["text"] for c in chunks)
    ranked = store.rank("entities", "journal", list(two), k=3)
    assert len(ranked) == 3 and ranked[0].score >= ranked[-1].score
    rel_hits = store.search_relations("published by the Society for the Exploration of Psychotherapy Integration", k=3)
    assert len(rel_hits) == 3 and store.relation(rel_hits[0].id)["description"]


def test_loading_an_unfinished_folder_fails_clearly(tmp_path):
    with pytest.raises(GraphFolderError, match="did not finish"):
        GraphStore.load(str(tmp_path))


def test_load_through_a_filesystem_uri(graph_dir, store, embedder):
    via_uri = GraphStore.load(f"file://{graph_dir}", embedder)
    q = "Journal of Psychotherapy Integration"
    assert via_uri.search_chunks(q, 5) == store.search_chunks(q, 5)
    assert via_uri.count("entities") == store.count("entities")


def test_query_embedder_must_match_the_graph(graph_dir, embedder):
    class Other:
        name, dim = "another-model", 384

        def encode(self, texts):
            return embedder.encode(texts)

    with pytest.raises(GraphFolderError, match="another-model"):
        GraphStore.load(str(graph_dir), Other())
