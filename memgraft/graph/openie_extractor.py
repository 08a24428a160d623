"""An OpenIE-style extractor: subject-predicate-object triples read off spaCy's dependency parse.

Why a second LLM-free extractor: HGMem's Table 4 asks how the method holds up on a
graph from a different extractor. The default spaCy extractor links every pair of
entities that share a sentence (co-occurrence); this one links only what a verb
links: its subject to its object ("Babbage designed the Analytical Engine"), or to
the object of a preposition attached to it ("Ada worked with Babbage"). Each
relation is described by its triple, each entity by the sentence it came from.
The parser ships with the bundled en_core_web_sm.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from memgraft.config import ExtractionSettings
from memgraft.graph.extraction import EntityMention, Extraction, RelationMention
from memgraft.graph.spacy_extractor import LABEL_TYPES, MAX_DESCRIPTION_CHARS, _clean_span, _entity_name, load_spacy
from memgraft.ids import normalise_name
from memgraft.models.registry import display_name

SUBJECTS = {"nsubj", "nsubjpass", "csubj"}
OBJECTS = {"dobj", "attr", "oprd", "dative", "obj"}


def _phrase(token: Any) -> tuple[str, str] | None:
    """The entity a token stands for: its named entity, else its noun chunk; (name, type) or None."""
    if token.ent_type_ and token.ent_type_ in LABEL_TYPES:
        ent = next(e for e in token.doc.ents if e.start <= token.i < e.end)
        return _entity_name(ent.text), LABEL_TYPES[ent.label_]
    if token.ent_type_:  # a number, an ordinal: noise for retrieval
        return None
    for nc in token.sent.noun_chunks:
        if nc.start <= token.i < nc.end:
            name = _clean_span(nc)
            return (name, "concept") if name else None
    return None


def _with_conjuncts(token: Any) -> list[Any]:
    """"Ada and Babbage worked": both are subjects."""
    return [token, *token.conjuncts]


def triples(sent: Any) -> Iterator[tuple[Any, str, Any]]:
    """(subject token, predicate text, object token) for every verb of the sentence."""
    for verb in sent:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        subjects = [s for c in verb.children if c.dep_ in SUBJECTS for s in _with_conjuncts(c)]
        if not subjects:
            continue
        base = verb.lemma_ if verb.dep_ != "ROOT" else verb.text
        neg = " not" if any(c.dep_ == "neg" for c in verb.children) else ""
        for child in verb.children:
            if child.dep_ in OBJECTS:
                for obj in _with_conjuncts(child):
                    yield from ((s, f"{base}{neg}", obj) for s in subjects)
            elif child.dep_ in ("prep", "agent"):
                for pobj in (g for g in child.children if g.dep_ == "pobj"):
                    for obj in _with_conjuncts(pobj):
                        yield from ((s, f"{base}{neg} {child.text}", obj) for s in subjects)


class OpenIEExtractor:
    def __init__(self, settings: ExtractionSettings, model: str = "bundled:en_core_web_sm"):
        self.settings = settings
        self.nlp = load_spacy(model, noun_chunks=True)  # the dependency parse
        self.name = f"openie:{display_name(model)}"

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [self._from_doc(doc) for doc in self.nlp.pipe(texts, batch_size=64)]

    def _from_doc(self, doc: Any) -> Extraction:
        entities: dict[str, EntityMention] = {}
        relations: dict[tuple[str, str, str], RelationMention] = {}
        for sent in doc.sents:
            sentence = " ".join(sent.text.split())[:MAX_DESCRIPTION_CHARS]
            for subj, predicate, obj in triples(sent):
                a, b = _phrase(subj), _phrase(obj)
                if not a or not b:
                    continue
                ka, kb = normalise_name(a[0]), normalise_name(b[0])
                if ka == kb or min(len(ka), len(kb)) < self.settings.min_entity_chars:
                    continue
                for key, (name, kind) in ((ka, a), (kb, b)):
                    entities.setdefault(key, EntityMention(name, kind, sentence))
                triple = f"{a[0]} {predicate} {b[0]}"
                relations.setdefault((ka, kb, predicate), RelationMention(a[0], b[0], triple, 1.0))
        return Extraction(list(entities.values()), list(relations.values()))
