"""Schema-constrained LLM extraction (HGMem's offline step, LightRAG-style).

Each chunk gets one chat request whose answer must be an :class:`ExtractionOutput`
JSON object; decoding is constrained to its schema and the answer validated
with pydantic. A chunk that still fails after the retries is recorded with an
error and no mentions: a failure is never patched into a guess.

:func:`build_messages` and :func:`parse_extraction` are the two halves the Ray
Data vLLM processor (``pipelines/llm_extract_processor.py``) reuses, so both
paths produce the same columns.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, Sequence, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model

from memgraft.config import Settings
from memgraft.graph.extraction import ENTITY_TYPES, EntityMention, Extraction, RelationMention
from memgraft.graph.prompts import EXTRACTION_SYSTEM, EXTRACTION_USER
from memgraft.ids import normalise_name
from memgraft.models.llm.base import LLM, Message, generate_structured, parse_json_as

# Bounds in the schema keep a small model's constrained output finite; they sit
# well above what a 200-token chunk needs.
MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 400
MAX_ENTITIES = 40
MAX_RELATIONS = 60


class _Strict(BaseModel):
    # additionalProperties=false: what OpenAI's strict mode and vLLM expect.
    model_config = ConfigDict(extra="forbid")


class EntityOutput(_Strict):
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    type: Literal["organization", "person", "geo", "event", "role", "concept"]
    description: str = Field(max_length=MAX_DESCRIPTION_CHARS)


assert get_args(EntityOutput.model_fields["type"].annotation) == ENTITY_TYPES


class RelationOutput(_Strict):
    source: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    target: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    description: str = Field(max_length=MAX_DESCRIPTION_CHARS)
    strength: float = Field(ge=1, le=10)


class ExtractionOutput(_Strict):
    """What the LLM must return for one chunk."""

    entities: list[EntityOutput] = Field(max_length=MAX_ENTITIES)
    relations: list[RelationOutput] = Field(max_length=MAX_RELATIONS)


@lru_cache(maxsize=16)
def extraction_model(
    entity_types: tuple[str, ...] = ENTITY_TYPES,
    *,
    max_entities: int = MAX_ENTITIES,
    max_relations: int = MAX_RELATIONS,
    max_name_chars: int = MAX_NAME_CHARS,
    max_description_chars: int = MAX_DESCRIPTION_CHARS,
) -> type[ExtractionOutput]:
    """The output model for an entity-type list and size bounds (the default one unless changed).

    Tighter bounds make the worst-case answer fit a small token budget: under
    constrained decoding a model that repeats itself must still close the JSON.
    """
    limits = (max_entities, max_relations, max_name_chars, max_description_chars)
    if tuple(entity_types) == ENTITY_TYPES and limits == (MAX_ENTITIES, MAX_RELATIONS, MAX_NAME_CHARS, MAX_DESCRIPTION_CHARS):
        return ExtractionOutput
    name = (str, Field(min_length=1, max_length=max_name_chars))
    description = (str, Field(max_length=max_description_chars))
    entity = create_model(
        "EntityOutput", __base__=_Strict,
        name=name, type=(Literal[tuple(entity_types)], ...), description=description,  # type: ignore[valid-type]
    )
    relation = create_model(
        "RelationOutput", __base__=_Strict,
        source=name, target=name, description=description, strength=(float, Field(ge=1, le=10)),
    )
    return create_model(  # type: ignore[return-value]
        "ExtractionOutput", __base__=_Strict, __doc__=ExtractionOutput.__doc__,
        entities=(list[entity], Field(max_length=max_entities)),  # type: ignore[valid-type]
        relations=(list[relation], Field(max_length=max_relations)),  # type: ignore[valid-type]
    )


def _entity_types(settings: Settings | None) -> tuple[str, ...]:
    return tuple(settings.extraction.entity_types) if settings is not None else ENTITY_TYPES


def build_messages(text: str, settings: Settings | None = None) -> list[Message]:
    """The chat for one chunk: instructions as the system turn, the passage as the user turn."""
    types = ", ".join(_entity_types(settings))
    return [
        {"role": "system", "content": EXTRACTION_SYSTEM.substitute(entity_types=types)},
        {"role": "user", "content": EXTRACTION_USER.substitute(text=text.strip())},
    ]


def to_extraction(output: ExtractionOutput) -> Extraction:
    """Turn a validated answer into mentions.

    Entities are de-duplicated by normalised name (the first spelling and type
    win; further descriptions are appended). Relation endpoints are mapped onto
    the listed entities; an endpoint the model did not list is kept and added as
    a ``concept`` entity described by the relation. Self-relations carry no
    information and are dropped.
    """
    entities: dict[str, EntityMention] = {}
    for e in output.entities:
        name, key = e.name.strip(), normalise_name(e.name)
        if not key:
            continue
        desc = e.description.strip()
        if key not in entities:
            entities[key] = EntityMention(name=name, type=e.type, description=desc)
        elif desc and desc not in entities[key].description:
            entities[key].description = f"{entities[key].description} {desc}".strip()
    relations: list[RelationMention] = []
    for r in output.relations:
        keys = normalise_name(r.source), normalise_name(r.target)
        if not all(keys) or keys[0] == keys[1]:
            continue
        desc = r.description.strip()
        for key, raw in zip(keys, (r.source, r.target)):
            if key not in entities:
                entities[key] = EntityMention(name=raw.strip(), type="concept", description=desc)
        relations.append(RelationMention(
            source=entities[keys[0]].name, target=entities[keys[1]].name,
            description=desc, strength=float(r.strength),
        ))
    return Extraction(entities=list(entities.values()), relations=relations)


def parse_extraction(text: str, entity_types: Sequence[str] = ENTITY_TYPES) -> Extraction:
    """Validate one raw answer; an invalid one becomes ``Extraction(error=...)``."""
    try:
        output = parse_json_as(extraction_model(tuple(entity_types)), text)
    except ValueError as err:
        return Extraction(error=str(err))
    return to_extraction(output)


class LLMExtractor:
    """The :class:`~memgraft.graph.extraction.Extractor` backed by any :class:`LLM`."""

    def __init__(self, llm: LLM, settings: Settings):
        self.llm = llm
        self.settings = settings
        self.name = f"llm:{llm.name}"
        self.output_model = extraction_model(_entity_types(settings))

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMExtractor":
        from memgraft.models.llm.factory import load_llm

        return cls(load_llm(settings), settings)

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        results: list[Extraction] = [Extraction() for _ in texts]
        todo = [i for i, t in enumerate(texts) if t.strip()]  # blank chunks need no model call
        if not todo:
            return results
        g = self.settings.generation
        answers = generate_structured(
            self.llm, [build_messages(texts[i], self.settings) for i in todo], self.output_model,
            retries=g.json_retries, max_new_tokens=self.settings.extraction.llm_max_new_tokens,
            temperature=g.temperature, salvage_cut=g.salvage_cut_replies,
        )
        for i, answer in zip(todo, answers):
            if answer.value is not None:
                ext = to_extraction(answer.value)
            else:
                last = answer.errors[-1] if answer.errors else "no output"
                ext = Extraction(error=f"no valid extraction after {answer.attempts} attempts: {last}")
            ext.prompt_tokens, ext.completion_tokens = answer.prompt_tokens, answer.completion_tokens
            results[i] = ext
        return results
