"""A small world for HGMem's tests and the served app: two clusters of entities joined by one bridge.

Ten facts, each its own chunk; :func:`fact_rows` gives the chunk, entity and relation rows a
build would write for them (test_hgmem_loop's store and served_app's graph folder read the same).
"""

from __future__ import annotations

from memgraft.ids import entity_id, relation_id

FACTS = [
    ("Ada Lovelace", "Charles Babbage", "Ada Lovelace worked with Charles Babbage on the engine."),
    ("Charles Babbage", "Analytical Engine", "Charles Babbage designed the Analytical Engine."),
    ("Analytical Engine", "London", "The Analytical Engine was planned in London."),
    ("Ada Lovelace", "Lord Byron", "Ada Lovelace was the daughter of Lord Byron."),
    ("Lord Byron", "Greece", "Lord Byron died in Greece."),
    ("Greece", "Athens", "Athens is the capital of Greece."),
    ("Alan Turing", "Bletchley Park", "Alan Turing worked at Bletchley Park."),
    ("Bletchley Park", "Enigma", "Enigma was broken at Bletchley Park."),
    ("Alan Turing", "Manchester", "Alan Turing later worked in Manchester."),
    ("Manchester", "Baby computer", "The Baby computer ran in Manchester."),
]


def fact_rows() -> dict[str, list[dict]]:
    """The chunks, entities and relations of :data:`FACTS` as table rows."""
    names = sorted({n for a, b, _ in FACTS for n in (a, b)})
    chunks = [{"chunk_id": f"c{i}", "doc_id": f"d{i}", "text": t, "token_start": 0, "token_end": 10, "n_tokens": 10,
               "char_start": 0, "char_end": len(t)} for i, (_, _, t) in enumerate(FACTS)]
    ents = [{"entity_id": entity_id(n), "name": n, "type": "concept", "description": f"About {n}.",
             "chunk_ids": [f"c{i}" for i, (a, b, _) in enumerate(FACTS) if n in (a, b)]} for n in names]
    rels = [{"relation_id": relation_id(*sorted((entity_id(a), entity_id(b)))),
             "source_id": min(entity_id(a), entity_id(b)), "target_id": max(entity_id(a), entity_id(b)),
             "description": t, "weight": 1.0, "chunk_ids": [f"c{i}"]} for i, (a, b, t) in enumerate(FACTS)]
    return {"chunks": chunks, "entities": ents, "relations": rels}


def fact_vectors(rows: dict[str, list[dict]], embedder) -> dict:
    """Each table's vectors as a build embeds them: chunk texts, entity names, relation descriptions."""
    return {"chunks": embedder.encode([c["text"] for c in rows["chunks"]]),
            "entities": embedder.encode([e["name"] for e in rows["entities"]]),
            "relations": embedder.encode([r["description"] for r in rows["relations"]])}


def fact_store(embedder):
    """A :class:`GraphStore` over :data:`FACTS` in memory, with flat inner-product indexes like a build's."""
    import faiss
    import pyarrow as pa

    from memgraft.graph.store import GraphStore

    rows = fact_rows()
    tables = {k: pa.Table.from_pylist(v) for k, v in rows.items()}
    vectors = fact_vectors(rows, embedder)
    indexes = {}
    for k, v in vectors.items():
        indexes[k] = faiss.IndexFlatIP(v.shape[1])
        indexes[k].add(v)
    return GraphStore(tables, vectors, indexes, {"models": {"embedder": embedder.name}}, embedder)
