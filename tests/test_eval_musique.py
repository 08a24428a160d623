"""MuSiQue evaluation: passage ids as the build assigns them, HippoRAG's recall@k,
the two baseline retrievers on a hand-made store, and SQuAD-style answer scores."""

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memgraft.config import IndexSettings
from memgraft.eval.musique import (
    PassageIds, dense_retrieve, evaluate_retrieval, exact_match, graph_retrieve, load_questions,
    mean_recall, normalize_answer, parse_question, recall_at_k, token_f1,
)
from memgraft.graph import vector_index
from memgraft.graph.store import GraphStore
from memgraft.text.documents import list_input_files, read_files

# -- passage ids ----------------------------------------------------------------------------


def _corpus(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(records))
    return path


def test_passage_ids_follow_the_readers_titles_and_repeats(tmp_path: Path):
    path = _corpus(tmp_path, [
        {"title": "Paris", "text": "Paris is the capital of France."},
        {"title": "Lyon", "text": "Lyon is on the Rhone."},
        {"title": "Paris", "text": "Paris, Texas is a city."},
        {"title": "Paris", "text": ""},  # rejected by the reader, but it still takes " #3"
        {"title": "Paris", "text": "Paris is a Greek hero."},
        {"title": "Nice", "text": "Nice is by the sea."},
    ])
    ids = PassageIds.from_corpus(path)
    assert len(ids) == 5
    assert ids("Paris", "Paris is the capital of France.") == "Paris"
    assert ids("Paris", "Paris, Texas is a city.") == "Paris #2"
    assert ids("Paris", "Paris is a Greek hero.") == "Paris #4"
    assert ids("Nice", "Nice is by the sea.") == "Nice"
    assert ids.get("Paris", "not in the corpus") is None
    with pytest.raises(KeyError):
        ids("Lyon", "Lyon is on the Seine.")
    # the same ids the pipeline's reader gives the documents it indexes
    root, files = list_input_files(path)
    docs, _ = read_files(files, root, 20.0)
    assert {d.doc_id for d in docs} == {"Paris", "Lyon", "Paris #2", "Paris #4", "Nice"}


def test_text_that_starts_with_its_title_is_not_prefixed_twice(tmp_path: Path):
    ids = PassageIds.from_corpus(_corpus(tmp_path, [{"title": "Lyon", "text": "Lyon\n\nalready titled"}]))
    assert ids("Lyon", "Lyon\n\nalready titled") == "Lyon"


def test_questions_and_their_gold_doc_ids(tmp_path: Path):
    path = _corpus(tmp_path, [
        {"title": "A", "text": "first A"}, {"title": "B", "text": "only B"}, {"title": "A", "text": "second A"},
    ])
    record = {
        "id": "2hop__1_2", "question": "Q?", "answer": "x", "answer_aliases": ["y"],
        "paragraphs": [
            {"idx": 0, "title": "A", "paragraph_text": "second A", "is_supporting": True},
            {"idx": 1, "title": "B", "paragraph_text": "only B", "is_supporting": False},
            {"idx": 2, "title": "A", "paragraph_text": "first A", "is_supporting": True},
        ],
        "question_decomposition": [{"id": 1}, {"id": 2}],
    }
    q = parse_question(record)
    assert (q.id, q.hops, q.answers) == ("2hop__1_2", 2, ["x", "y"])
    assert q.supporting == [("A", "second A"), ("A", "first A")]
    assert PassageIds.from_corpus(path).gold(q) == ["A #2", "A"]
    qpath = tmp_path / "q.json"
    qpath.write_text(json.dumps([record]))
    assert load_questions(qpath) == [q]


def test_real_musique_questions_all_map_to_corpus_passages():
    data = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "musique"
    if not data.exists():
        pytest.skip("../shared/data/musique is not here")
    questions = load_questions(data / "musique_train.json")
    ids = PassageIds.from_corpus(data / "musique_train_corpus.json")
    golds = [ids.gold(q) for q in questions]
    assert len(questions) == 100 and sum(map(len, golds)) == 237
    assert golds[0] == ["Journal of Psychotherapy Integration", "Adolescence"]
    assert sum("#" in d for g in golds for d in g) > 0  # some supporting passages share a title


# -- recall ----------------------------------------------------------------------------------


def test_recall_at_k_by_hand():
    retrieved = ["a", "b", "c", "d", "e", "f"]
    assert recall_at_k(retrieved, ["a", "c"], 1) == 0.5
    assert recall_at_k(retrieved, ["a", "c"], 2) == 0.5
    assert recall_at_k(retrieved, ["a", "c"], 3) == 1.0
    assert recall_at_k(retrieved, ["f", "z", "a"], 5) == pytest.approx(1 / 3)
    assert recall_at_k(retrieved, ["f", "z", "a"], 6) == pytest.approx(2 / 3)
    assert recall_at_k([], ["a"], 5) == 0.0
    # repeats count once, in both lists: the passages are the distinct documents in rank order
    assert recall_at_k(["a", "a", "a", "b"], ["b", "b"], 2) == 1.0
    with pytest.raises(ValueError):
        recall_at_k(retrieved, [], 5)


def test_mean_recall_averages_per_question():
    runs = [(["a", "b"], ["a", "x"]), (["c", "d"], ["d"]), (["e"], ["q", "r", "s", "t"])]
    assert mean_recall(runs, 2) == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert mean_recall(runs, 1) == pytest.approx((0.5 + 0.0 + 0.0) / 3)


# -- retrievers on a hand-made store ------------------------------------------------------


def _unit(*v: float) -> np.ndarray:
    a = np.asarray(v, np.float32)
    return a / np.linalg.norm(a)


@pytest.fixture()
def store() -> GraphStore:
    """Four chunks in three documents, three entities, in a 3-d space with hand-placed vectors."""
    chunks = pa.table({
        "chunk_id": ["c1", "c2", "c3", "c4"], "doc_id": ["D1", "D1", "D2", "D3"],
        "text": ["", "", "", ""],
    })
    entities = pa.table({
        "entity_id": ["e1", "e2", "e3"], "name": ["x", "y", "z"], "type": ["concept"] * 3,
        "description": ["", "", ""], "chunk_ids": [["c4"], ["c3", "c1"], ["c2"]],
    })
    relations = pa.table({
        "relation_id": pa.array([], pa.string()), "source_id": pa.array([], pa.string()),
        "target_id": pa.array([], pa.string()), "description": pa.array([], pa.string()),
        "weight": pa.array([], pa.float64()), "chunk_ids": pa.array([], pa.list_(pa.string())),
    })
    vectors = {
        # query is (1, 0, 0): c1 0.99, c2 0.95, c3 0.5, c4 0.1
        "chunks": np.stack([_unit(0.99, 0.141, 0), _unit(0.95, 0.312, 0), _unit(0.5, 0.866, 0), _unit(0.1, 0.995, 0)]),
        # e1 is nearest the query, then e2, then e3
        "entities": np.stack([_unit(1, 0, 0), _unit(0.8, 0, 0.6), _unit(0, 0, 1)]),
        "relations": np.zeros((0, 3), np.float32),
    }
    indexes = {k: vector_index.build_index(v, IndexSettings()) for k, v in vectors.items()}
    return GraphStore({"chunks": chunks, "entities": entities, "relations": relations}, vectors, indexes, {})


QUERY = np.array([1, 0, 0], np.float32)


def test_dense_retrieval_dedupes_chunks_to_documents(store: GraphStore):
    # chunks by score c1(D1) c2(D1) c3(D2) c4(D3): two chunks of D1 do not take two places
    assert dense_retrieve(store, QUERY, 1) == ["D1"]
    assert dense_retrieve(store, QUERY, 2) == ["D1", "D2"]
    assert dense_retrieve(store, QUERY, 5) == ["D1", "D2", "D3"]


def test_graph_retrieval_ranks_the_entities_chunks_by_the_query(store: GraphStore):
    # top-1 entity e1 -> only c4 (D3)
    assert graph_retrieve(store, QUERY, 5, top_entities=1) == ["D3"]
    # e1, e2 -> c4, c3, c1 -> ranked c1 (D1), c3 (D2), c4 (D3)
    assert graph_retrieve(store, QUERY, 5, top_entities=2) == ["D1", "D2", "D3"]
    assert graph_retrieve(store, QUERY, 1, top_entities=2) == ["D1"]


def test_evaluate_retrieval_reports_recall_per_retriever(store: GraphStore, tmp_path: Path):
    path = _corpus(tmp_path, [{"title": "D1", "text": "one"}, {"title": "D2", "text": "two"}, {"title": "D3", "text": "three"}])
    ids = PassageIds.from_corpus(path)
    qs = [parse_question({"id": "q", "question": "?", "answer": "",
                          "paragraphs": [{"title": "D3", "paragraph_text": "three", "is_supporting": True},
                                         {"title": "D2", "paragraph_text": "two", "is_supporting": True}]})]
    out = evaluate_retrieval(store, qs, ids, ks=(1, 2), top_entities=1, query_vectors=QUERY[None, :])
    assert out["dense"]["recall@1"] == 0.0 and out["dense"]["recall@2"] == 0.5
    assert out["graph"]["recall@1"] == 0.5 and out["graph"]["recall@2"] == 0.5
    assert out["graph"]["mean_passages"] == 1.0


# -- answer scores ---------------------------------------------------------------------------


def test_normalize_answer_like_squad():
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("Theatre") == "theatre"  # only whole-word articles go


def test_exact_match_by_hand():
    assert exact_match("the G. Stanley Hall", ["G. Stanley Hall", "Stanley Hall"]) == 1.0
    assert exact_match("Stanley Hall.", ["G. Stanley Hall", "Stanley Hall"]) == 1.0
    assert exact_match("Hall", "G. Stanley Hall") == 0.0


def test_token_f1_by_hand():
    # pred "stanley hall university" vs gold "g stanley hall": 2 shared; P = 2/3, R = 2/3 -> F1 = 2/3
    assert token_f1("Stanley Hall University", "G. Stanley Hall") == pytest.approx(2 / 3)
    # vs the alias "stanley hall": P = 2/3, R = 1 -> F1 = 0.8, the best of the two
    assert token_f1("Stanley Hall University", ["G. Stanley Hall", "Stanley Hall"]) == pytest.approx(0.8)
    # repeated tokens count up to their multiplicity: pred "new new york" vs "new york": same = 2, P = 2/3, R = 1
    assert token_f1("new new york", "New York") == pytest.approx(0.8)
    assert token_f1("Paris", "London") == 0.0
    assert token_f1("the", "a") == 1.0  # both empty after normalisation (SQuAD v2)
    assert token_f1("the", "Paris") == 0.0
    assert token_f1("anything", []) == 0.0
