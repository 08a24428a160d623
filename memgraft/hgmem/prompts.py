"""HGMem's prompts and the JSON schemas their answers are decoded under.

Four calls per step at most: judge sufficiency (and raise concerns as
subqueries), evolve memory (update and insert), merge (from the second step on),
and answer. The output models bound list lengths and text sizes, so a small
model decoding under the grammar cannot ramble past its token budget.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal, Sequence

from pydantic import BaseModel, Field, create_model

SYSTEM = (
    "You are the working memory of a question-answering system that reads a large document collection "
    "step by step. You keep a memory of facts, each linking two or more entities. "
    "Reply only with JSON that matches the requested schema."
)


class Concern(BaseModel):
    kind: Literal["local", "global"] = Field(
        description="local: dig deeper around existing memory points; global: look for something memory lacks")
    point_ids: list[str] = Field(default_factory=list, max_length=3, description="memory points a local concern is about")
    subquery: str = Field(min_length=3, max_length=200)


class SufficiencyJudgement(BaseModel):
    sufficient: bool
    concerns: list[Concern] = Field(default_factory=list, max_length=3)


class PointUpdate(BaseModel):
    point_id: str = Field(max_length=12)
    description: str = Field(min_length=3, max_length=400)
    entities: list[str] = Field(default_factory=list, max_length=6, description="entities to add to the point")


class PointInsert(BaseModel):
    description: str = Field(min_length=3, max_length=400)
    entities: list[str] = Field(min_length=2, max_length=6)


class Evolution(BaseModel):
    updates: list[PointUpdate] = Field(default_factory=list, max_length=4)
    inserts: list[PointInsert] = Field(default_factory=list, max_length=4)


class InsertOnly(BaseModel):
    """The no-update ablation's evolution: memory only grows by insertion."""

    inserts: list[PointInsert] = Field(default_factory=list, max_length=4)


class PointMerge(BaseModel):
    point_ids: list[str] = Field(min_length=2, max_length=4)
    description: str = Field(min_length=3, max_length=500)


class Merging(BaseModel):
    merges: list[PointMerge] = Field(default_factory=list, max_length=2)


class Answer(BaseModel):
    answer: str = Field(min_length=1, max_length=400)


SUFFICIENCY = """Question: {question}

Current memory:
{memory}

Is this memory enough to answer the question fully and with evidence?
If not, raise at most {max_concerns} concerns. Each concern is a short search query (subquery):
- "local" when it asks for more detail about specific memory points (give their ids in point_ids);
- "global" when it asks for information that no memory point covers yet.
Answer as JSON: {{"sufficient": true|false, "concerns": [{{"kind": "local"|"global", "point_ids": [...], "subquery": "..."}}]}}"""

_EVIDENCE = """Question: {question}

Current memory:
{memory}

New evidence retrieved for the subqueries {subqueries}:
Entities:
{entities}
Relations:
{relations}
Passages:
{chunks}

"""

EVOLVE = _EVIDENCE + """Evolve the memory so that it holds what matters for the question:
- update a memory point (by its id) when the evidence refines or corrects it;
- insert a new memory point for a new fact; it must name two or more entities, using their names as written above.
Keep each description to one or two factual sentences grounded in the evidence.
Answer as JSON: {{"updates": [{{"point_id": "p1", "description": "...", "entities": [...]}}], "inserts": [{{"description": "...", "entities": ["A", "B"]}}]}}"""

EVOLVE_INSERT_ONLY = _EVIDENCE + """Add new memory points for the facts that matter for the question. Each must name two or more entities,
using their names as written above, and say one or two factual sentences grounded in the evidence.
Answer as JSON: {{"inserts": [{{"description": "...", "entities": ["A", "B"]}}]}}"""

MERGE = """Question: {question}

Current memory:
{memory}

Some memory points may describe parts of one larger fact or line of reasoning. Merge such cohesive points
into one higher-order point whose description combines them (a merged point joins all their entities).
Merge only points that belong together; an empty list is a fine answer.
Answer as JSON: {{"merges": [{{"point_ids": ["p1", "p2"], "description": "..."}}]}}"""

ANSWER_FROM_MEMORY = """Question: {question}

Memory:
{memory}

Supporting passages:
{chunks}

Answer the question from this memory and these passages only. Be brief: a name, date, number or short phrase
when the question asks for one.
Answer as JSON: {{"answer": "..."}}"""

ANSWER_FROM_PASSAGES = """Question: {question}

Passages:
{chunks}
{graph}
Answer the question from these passages only. Be brief: a name, date, number or short phrase when the
question asks for one.
Answer as JSON: {{"answer": "..."}}"""


# -- schemas narrowed to the memory at hand -------------------------------------
# A point id the model may name is constrained to the active points' ids, so the
# decoder cannot invent one; with an empty memory there is nothing to update, and
# the step must insert at least one point.

def _ids(point_ids: tuple[str, ...]) -> Any:
    return Literal[point_ids]  # type: ignore[valid-type]


# Building a pydantic model costs milliseconds, and ids run p1, p2, ... in every question,
# so the same few shapes recur across the questions a driver worker runs: build each once.

def sufficiency_model(point_ids: Sequence[str]) -> type[BaseModel]:
    return _sufficiency_model(tuple(point_ids))


def evolution_model(point_ids: Sequence[str], update: bool, entity_names: Sequence[str]) -> type[BaseModel]:
    """The evolve step's schema: point ids and entity names are enums of what this step may name
    (the active points; the entities it retrieved and showed, and memory's own), so the decoder cannot
    invent a vertex. Fewer than two names: no insert is possible, and the schema offers none."""
    return _evolution_model(tuple(point_ids), update, tuple(dict.fromkeys(entity_names)))


def merging_model(point_ids: Sequence[str]) -> type[BaseModel]:
    return _merging_model(tuple(point_ids))


@lru_cache(maxsize=1024)
def _sufficiency_model(point_ids: tuple[str, ...]) -> type[BaseModel]:
    if not point_ids:
        return SufficiencyJudgement
    concern = create_model("Concern", __base__=Concern,
                           point_ids=(list[_ids(point_ids)], Field(default_factory=list, max_length=3)))
    return create_model("SufficiencyJudgement", __base__=SufficiencyJudgement,
                        concerns=(list[concern], Field(default_factory=list, max_length=3)))


@lru_cache(maxsize=256)
def _evolution_model(point_ids: tuple[str, ...], update: bool, names: tuple[str, ...]) -> type[BaseModel]:
    updating = bool(point_ids and update)
    fields: dict[str, Any] = {}
    if updating:  # first, as the prompt's example has it
        added = ((list[_ids(names)], Field(default_factory=list, max_length=6)) if names  # type: ignore[misc]
                 else (list[str], Field(default_factory=list, max_length=0)))
        point_update = create_model("PointUpdate", __base__=PointUpdate, point_id=(_ids(point_ids), ...),
                                    entities=added)
        fields["updates"] = (list[point_update], Field(default_factory=list, max_length=4))
    if len(names) >= 2:
        insert = create_model("PointInsert", __base__=PointInsert,
                              entities=(list[_ids(names)], Field(min_length=2, max_length=6)))  # type: ignore[misc]
        # an empty memory must gain a point
        fields["inserts"] = (list[insert], Field(default_factory=list, min_length=0 if point_ids else 1, max_length=4))
    return create_model("Evolution" if updating else "InsertOnly", __base__=BaseModel, **fields)


def can_evolve(point_ids: Sequence[str], update: bool, entity_names: Sequence[str]) -> bool:
    """Whether the step has any operation to offer: an insert needs two names, an update a point."""
    return len(set(entity_names)) >= 2 or bool(point_ids and update)


@lru_cache(maxsize=1024)
def _merging_model(point_ids: tuple[str, ...]) -> type[BaseModel]:
    merge = create_model("PointMerge", __base__=PointMerge,
                         point_ids=(list[_ids(point_ids)], Field(min_length=2, max_length=4)))
    return create_model("Merging", __base__=Merging, merges=(list[merge], Field(default_factory=list, max_length=2)))


def messages(template: str, **fields: object) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": template.format(**fields)}]


def all_output_models() -> list[type[BaseModel]]:
    """Every schema shape the loop decodes under, for tests that check the decoder accepts them all."""
    ids = ["p1", "p2", "p3"]
    # names as a graph holds them: quotes, backslashes, accents and one name that is a prefix of another
    names = ["Ada Lovelace", 'The "Analytical" Engine', "C:\\path", "Zoë", "Ada", "Ada Lovelace Day"]
    return [SufficiencyJudgement, sufficiency_model(ids), evolution_model([], True, names),
            evolution_model(ids, True, names), evolution_model(ids, False, names), evolution_model(ids, True, ["A"]),
            evolution_model(ids, True, []), merging_model(ids), Answer]
