"""The LLM-free extractor on sentences with known entities, and the merge."""

import pytest

from memgraft.graph.extraction import extract_batch
from memgraft.graph.merge import mention_tables, merge_graph
from memgraft.graph.spacy_extractor import SpacyExtractor
from memgraft.ids import entity_id, normalise_name, relation_id


@pytest.fixture(scope="module")
def extractor(settings):
    return SpacyExtractor(settings.extraction, settings.models.spacy_model)


def test_named_entities_types_and_shared_sentence_relations(extractor):
    text = "Marie Curie was born in Warsaw. She worked at the University of Paris with Pierre Curie."
    [ex] = extractor.extract([text])
    types = {e.name: e.type for e in ex.entities}
    assert types["Marie Curie"] == "person" and types["Warsaw"] == "geo"
    assert types["University of Paris"] == "organization" and types["Pierre Curie"] == "person"
    pairs = {frozenset((r.source, r.target)): r.description for r in ex.relations}
    assert pairs[frozenset(("Marie Curie", "Warsaw"))] == "Marie Curie was born in Warsaw."
    assert frozenset(("University of Paris", "Pierre Curie")) in pairs
    assert frozenset(("Marie Curie", "Pierre Curie")) not in pairs  # different sentences


def test_noun_chunks_become_concepts_without_determiners(settings):
    unfiltered = SpacyExtractor(settings.extraction.model_copy(update={"noun_chunk_filter": "none"}),
                                settings.models.spacy_model)
    [ex] = unfiltered.extract(["The engineers repaired the old bridge near the river."])
    assert {e.name: e.type for e in ex.entities} == {"engineers": "concept", "old bridge": "concept", "river": "concept"}


def test_single_common_noun_concepts_can_be_dropped(settings):
    assert settings.extraction.noun_chunk_filter == "single_common"  # the default, chosen by `make bench`
    kept = SpacyExtractor(settings.extraction.model_copy(update={"noun_chunk_filter": "none"}),
                          settings.models.spacy_model)
    filtered = SpacyExtractor(settings.extraction.model_copy(update={"noun_chunk_filter": "single_common"}),
                              settings.models.spacy_model)
    text = "On behalf of the engineers, Marie Curie repaired the old bridge in Warsaw at that time."
    [a], [b] = kept.extract([text]), filtered.extract([text])
    names_a, names_b = {e.name for e in a.entities}, {e.name for e in b.entities}
    assert {"behalf", "engineers", "time"} <= names_a
    assert names_b == names_a - {"behalf", "engineers", "time"}  # one lower-case common noun each
    assert {"Marie Curie", "Warsaw", "old bridge"} <= names_b  # named entities and multi-word chunks stay


def test_per_sentence_cap(settings):
    capped = SpacyExtractor(settings.extraction.model_copy(update={"max_entities_per_sentence": 3}), settings.models.spacy_model)
    [ex] = capped.extract(["Alice, Bob, Carol, Dave and Erin met Frank in London, Paris and Rome."])
    assert len(ex.entities) == 3 and len(ex.relations) == 3


def test_merge_keys_on_normalised_names_and_sums_weights():
    assert normalise_name("The  Beatles!") == normalise_name("beatles") == "beatles"
    chunks = ["c1", "c2", "c3"]
    ents = [
        [{"name": "The Beatles", "type": "organization", "description": "A band."},
         {"name": "Liverpool", "type": "geo", "description": "A city."}],
        [{"name": "Beatles", "type": "organization", "description": "Formed in 1960."},
         {"name": "Liverpool", "type": "geo", "description": "A city."}],
        [{"name": "beatles", "type": "concept", "description": ""}],
    ]
    rels = [
        [{"source": "The Beatles", "target": "Liverpool", "description": "Formed there.", "strength": 2.0}],
        [{"source": "Liverpool", "target": "Beatles", "description": "Home city.", "strength": 1.0},
         {"source": "Beatles", "target": "Nowhere", "description": "dangling end", "strength": 1.0}],
        [],
    ]
    em, rm = mention_tables(chunks, ["d"] * 3, ents, rels)
    entities, relations = merge_graph(em, rm)
    by_id = {r["entity_id"]: r for r in entities.to_pylist()}
    beatles = by_id[entity_id("Beatles")]
    assert beatles["type"] == "organization" and beatles["chunk_ids"] == ["c1", "c2", "c3"]
    assert beatles["description"] == "A band. | Formed in 1960."
    assert by_id[entity_id("Liverpool")]["description"] == "A city."
    [rel] = relations.to_pylist()  # the dangling relation is dropped: "Nowhere" is no entity
    assert rel["relation_id"] == relation_id(entity_id("Beatles"), entity_id("Liverpool"))
    assert rel["weight"] == 3.0 and rel["chunk_ids"] == ["c1", "c2"]
    assert rel["description"] == "Formed there. | Home city."


def test_extract_batch_adds_columns(extractor):
    out = extract_batch(extractor, {"chunk_id": ["a"], "text": ["Paris is in France."]})
    assert out["chunk_id"] == ["a"] and out["extract_error"] == [""]
    assert {e["name"] for e in out["entities"][0]} == {"Paris", "France"}


def test_openie_links_what_a_verb_links_not_every_pair_in_a_sentence(settings):
    """HGMem's Table 4 graph: subject-predicate-object triples from the dependency parse."""
    from memgraft.graph.extractors import make_extractor

    s = settings.model_copy(update={"extraction": settings.extraction.model_copy(update={"method": "openie"})})
    extractor = make_extractor(s)
    assert extractor.name.startswith("openie:")
    [r] = extractor.extract(["Ada Lovelace worked with Charles Babbage in London. Babbage designed the Analytical Engine."])
    triples = {(m.source, m.target): m.description for m in r.relations}
    assert triples[("Ada Lovelace", "Charles Babbage")] == "Ada Lovelace worked with Charles Babbage"
    assert triples[("Babbage", "Analytical Engine")] == "Babbage designed Analytical Engine"
    assert ("Charles Babbage", "London") not in triples  # co-occurring, but no verb links them
    cooccurrence = SpacyExtractor(settings.extraction).extract(["Ada Lovelace worked with Charles Babbage in London."])[0]
    assert any({m.source, m.target} == {"Charles Babbage", "London"} for m in cooccurrence.relations)
    assert {e.name for e in r.entities} >= {"Ada Lovelace", "Charles Babbage", "London", "Analytical Engine"}
