"""MuSiQue as HippoRAG packages it: questions, passage ids, retrieval recall, answer scores.

``musique_train.json`` holds the questions, each with 20 paragraphs of which
some are marked ``is_supporting``; ``musique_train_corpus.json`` holds the
``{title, text}`` passages a graph is built from. The build pipeline reads that
corpus with :func:`memgraft.text.documents.read_file`, so a passage's doc_id is
its title (a repeated title gets `` #2``, `` #3``, ... in file order) and its
indexed text is ``title\\n\\ntext``; :class:`PassageIds` replays that same reader
to map a supporting paragraph to the doc_id of the passage the graph holds.

Recall@k is HippoRAG's retrieval metric: per question, the share of its
supporting passages among the top-k retrieved passages (distinct doc_ids of the
retrieved chunks, in rank order), averaged over questions. Exact match and
token F1 use SQuAD's answer normalisation, best over the answer and its aliases.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from memgraft.text.documents import Document, _title_text, read_file

# -- questions -----------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    answer_aliases: list[str] = field(default_factory=list)
    supporting: list[tuple[str, str]] = field(default_factory=list)  # (title, paragraph_text), in paragraph order
    hops: int = 0  # steps in the question's decomposition

    @property
    def answers(self) -> list[str]:
        """The answer first, then its aliases, without repeats."""
        return list(dict.fromkeys([self.answer, *self.answer_aliases]))


def parse_question(record: Mapping[str, Any]) -> Question:
    return Question(
        id=str(record["id"]),
        question=record["question"],
        answer=record.get("answer", ""),
        answer_aliases=list(record.get("answer_aliases") or []),
        supporting=[(p["title"], p["paragraph_text"]) for p in record.get("paragraphs", []) if p.get("is_supporting")],
        hops=len(record.get("question_decomposition") or []),
    )


def load_questions(path: str | Path) -> list[Question]:
    """``musique_*.json`` (a JSON list) or the same records one per line (``.jsonl``)."""
    text = Path(path).read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines() if line.strip()] if str(path).endswith(".jsonl") else json.loads(text)
    return [parse_question(r) for r in records]


# -- passages -> doc_ids -----------------------------------------------------------


class PassageIds:
    """(title, paragraph text) -> the doc_id the graph build gives that passage.

    Built from the same :class:`~memgraft.text.documents.Document` objects the
    pipeline indexes, so the ids (titles, `` #n`` for repeats) and the indexed
    text (``title\\n\\ntext``) follow the reader rather than a copy of its rules.
    An identical (title, text) pair seen twice maps to its first doc_id.
    """

    def __init__(self, documents: Iterable[Document]):
        self._ids: dict[tuple[str, str], str] = {}
        for doc in documents:
            self._ids.setdefault((doc.title, doc.text), doc.doc_id)

    @classmethod
    def from_corpus(cls, path: str | Path, max_mb: float = 20.0) -> "PassageIds":
        path = Path(path)
        return cls(item for item in read_file(path, path.parent, max_mb) if isinstance(item, Document))

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, title: str, text: str) -> str | None:
        return self._ids.get((title, _title_text(title, text)))

    def __call__(self, title: str, text: str) -> str:
        doc_id = self.get(title, text)
        if doc_id is None:
            raise KeyError(f"passage {title!r} ({text[:60]!r}...) is not in the corpus")
        return doc_id

    def gold(self, question: Question) -> list[str]:
        """The doc_ids of a question's supporting passages (distinct, in paragraph order)."""
        return list(dict.fromkeys(self(t, p) for t, p in question.supporting))


# -- recall ----------------------------------------------------------------------------


def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of ``gold`` among the first ``k`` distinct ``retrieved`` passages (HippoRAG's recall@k)."""
    wanted = set(gold)
    if not wanted:
        raise ValueError("recall is undefined for a question without supporting passages")
    top = list(dict.fromkeys(retrieved))[:k]
    return len(wanted.intersection(top)) / len(wanted)


def mean_recall(runs: Iterable[tuple[Sequence[str], Iterable[str]]], k: int) -> float:
    """Recall@k averaged over (retrieved, gold) pairs, one per question."""
    scores = [recall_at_k(retrieved, gold, k) for retrieved, gold in runs]
    return float(np.mean(scores)) if scores else float("nan")


# -- retrievers over a GraphStore ------------------------------------------------


def docs_in_order(store: Any, chunk_ids: Iterable[str]) -> list[str]:
    """The distinct doc_ids of ``chunk_ids``, in the chunks' order."""
    return list(dict.fromkeys(store.chunk(c)["doc_id"] for c in chunk_ids))


def dense_retrieve(store: Any, query: str | np.ndarray, k: int) -> list[str]:
    """NaiveRAG: nearest chunks to the query, deduplicated to their documents, the first ``k``."""
    vec = store.embed_query(query)
    total = store.count("chunks")
    fetch = k
    while True:
        docs = docs_in_order(store, (h.id for h in store.search_chunks(vec, fetch)))
        if len(docs) >= k or fetch >= total:
            return docs[:k]
        fetch = min(total, fetch * 2)  # several of the nearest chunks shared a document: widen


def graph_retrieve(store: Any, query: str | np.ndarray, k: int, top_entities: int = 20) -> list[str]:
    """Entity-to-chunk retrieval: the ``top_entities`` nearest entities, every chunk they came
    from, those chunks ranked by similarity to the query, deduplicated to documents, the first ``k``.

    Fewer than ``k`` documents come back when the entities' chunks span fewer.
    """
    vec = store.embed_query(query)
    candidates = [c for hit in store.search_entities(vec, top_entities) for c in store.entity_chunks(hit.id)]
    ranked = store.rank("chunks", vec, candidates, k=len(candidates))
    return docs_in_order(store, (h.id for h in ranked))[:k]


Retriever = Callable[[Any, np.ndarray, int], list[str]]


def retrievers(top_entities: int = 20) -> dict[str, Retriever]:
    """The two baselines HGMem's retrieval is compared against, by name."""
    return {
        "dense": dense_retrieve,
        "graph": lambda store, vec, k: graph_retrieve(store, vec, k, top_entities),
    }


def evaluate_retrieval(
    store: Any,
    questions: Sequence[Question],
    passage_ids: PassageIds,
    ks: Sequence[int] = (2, 5),
    top_entities: int = 20,
    query_vectors: np.ndarray | None = None,
) -> dict[str, dict[str, float]]:
    """``{retriever: {"recall@k": mean, ...}}`` over ``questions``.

    ``query_vectors`` (one row per question) spares re-encoding; without it the
    store's embedder encodes each question once.
    """
    if query_vectors is None:
        query_vectors = np.stack([store.embed_query(q.question) for q in questions]) if questions else np.zeros((0, 0))
    golds = [passage_ids.gold(q) for q in questions]
    out: dict[str, dict[str, float]] = {}
    for name, retrieve in retrievers(top_entities).items():
        retrieved = [retrieve(store, vec, max(ks)) for vec in query_vectors]
        out[name] = {f"recall@{k}": mean_recall(zip(retrieved, golds), k) for k in ks}
        out[name]["mean_passages"] = float(np.mean([len(r) for r in retrieved])) if retrieved else 0.0
    return out


# -- answer scores (SQuAD normalisation) -----------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, punctuation and the articles a/an/the removed, whitespace collapsed (SQuAD)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _as_list(answers: str | Iterable[str]) -> list[str]:
    return [answers] if isinstance(answers, str) else list(answers)


def exact_match(prediction: str, answers: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(a) for a in _as_list(answers)))


def _f1(prediction: str, answer: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    if not pred or not gold:  # SQuAD v2: an empty side scores 1 only against another empty one
        return float(pred == gold)
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, answers: str | Iterable[str]) -> float:
    """Token-overlap F1 of the normalised texts, best over the answers."""
    return max((_f1(prediction, a) for a in _as_list(answers)), default=0.0)
