"""LLM-free extraction with spaCy: named entities and noun chunks become entities,
and every pair of entities that share a sentence becomes a relation described by
that sentence (an OpenIE-style graph; HGMem's Table 4 shows it still works)."""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any, Sequence

from memgraft.config import ExtractionSettings
from memgraft.graph.extraction import EntityMention, Extraction, RelationMention
from memgraft.ids import normalise_name
from memgraft.models.registry import display_name, resolve

# spaCy's OntoNotes labels onto HGMem's entity types; numbers and ordinals are noise for retrieval.
LABEL_TYPES = {
    "PERSON": "person", "NORP": "organization", "ORG": "organization",
    "GPE": "geo", "LOC": "geo", "FAC": "geo", "EVENT": "event",
    "WORK_OF_ART": "concept", "LAW": "concept", "LANGUAGE": "concept", "PRODUCT": "concept",
    "DATE": "concept", "MONEY": "concept",
}
SKIP_POS = {"DET", "PRON", "PUNCT", "CCONJ", "ADP", "PART", "SPACE"}
MAX_DESCRIPTION_CHARS = 400


def load_spacy(model: str, noun_chunks: bool):
    import spacy

    keep_parser = noun_chunks  # noun chunks need the dependency parse
    exclude = ["lemmatizer", "attribute_ruler", "tagger"] if not keep_parser else ["lemmatizer"]
    nlp = spacy.load(resolve(model), exclude=exclude)
    if not keep_parser:
        nlp.disable_pipe("parser") if "parser" in nlp.pipe_names else None
        if "senter" in nlp.pipe_names or "senter" in nlp.disabled:
            nlp.enable_pipe("senter")
    return nlp


def _entity_name(text: str) -> str:
    return re.sub(r"^(the|The)\s+", "", " ".join(text.split()))


def _clean_span(span: Any, drop_single_common: bool = False) -> str:
    """A noun chunk without leading determiners or pronouns ("the old mill" -> "old mill").

    With ``drop_single_common``, a chunk left with one lower-case common noun ("behalf", "time", "upheaval",
    spaCy's NOUN, not PROPN) is dropped: alone it names no thing of its passage, yet as a vertex it links every
    passage that uses the word. Multi-word chunks ("old mill") and proper nouns stay; named entities are not
    noun chunks and always stay."""
    tokens = list(span)
    while tokens and (tokens[0].pos_ in SKIP_POS or tokens[0].is_stop):
        tokens = tokens[1:]
    if not tokens or all(t.is_stop or t.pos_ in SKIP_POS or t.like_num for t in tokens):
        return ""
    if drop_single_common and len(tokens) == 1 and tokens[0].pos_ == "NOUN" and tokens[0].is_lower:
        return ""
    return span.doc[tokens[0].i: tokens[-1].i + 1].text.strip()


class SpacyExtractor:
    def __init__(self, settings: ExtractionSettings, model: str = "bundled:en_core_web_sm"):
        self.settings = settings
        self.nlp = load_spacy(model, settings.noun_chunks)
        self.name = f"spacy:{display_name(model)}" + ("+noun_chunks" if settings.noun_chunks else "") + (
            f"-{settings.noun_chunk_filter}" if settings.noun_chunks and settings.noun_chunk_filter != "none" else "")

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [self._from_doc(doc) for doc in self.nlp.pipe(texts, batch_size=64)]

    def _from_doc(self, doc: Any) -> Extraction:
        s = self.settings
        entities: dict[str, EntityMention] = {}
        relations: dict[tuple[str, str], RelationMention] = {}
        for sent in doc.sents:
            sentence = " ".join(sent.text.split())[:MAX_DESCRIPTION_CHARS]
            found: list[tuple[str, str]] = []  # (name, type), named entities first
            covered: set[int] = set()
            for ent in sent.ents:
                kind = LABEL_TYPES.get(ent.label_)
                if kind:  # a span across a line break (a title above its text) is two mentions
                    found.extend((_entity_name(part), kind) for part in ent.text.split("\n") if part.strip())
                covered.update(range(ent.start, ent.end))
            if s.noun_chunks and doc.has_annotation("DEP"):
                for nc in sent.noun_chunks:
                    if covered.intersection(range(nc.start, nc.end)):
                        continue
                    name = _clean_span(nc, s.noun_chunk_filter == "single_common")
                    if name:
                        found.append((name, "concept"))
            names: list[str] = []
            keys: set[str] = set()
            for name, kind in found:
                key = normalise_name(name)
                if len(key) < s.min_entity_chars or key in keys:
                    continue
                keys.add(key)
                names.append(name)
                if key not in entities:
                    entities[key] = EntityMention(name, kind, sentence)
                if len(names) >= s.max_entities_per_sentence:
                    break
            for a, b in combinations(names, 2):
                pair = tuple(sorted((normalise_name(a), normalise_name(b))))
                if pair not in relations:
                    relations[pair] = RelationMention(a, b, sentence, 1.0)
        return Extraction(list(entities.values()), list(relations.values()))
