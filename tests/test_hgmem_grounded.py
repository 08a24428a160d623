"""Issue 34, grounded by construction: a memory operation can name only the entities its step retrieved
(or memory holds), by its schema, and every new or updated point cites the chunks and relations it came from."""

from __future__ import annotations

import json

import pytest

from memgraft.config import load_settings
from memgraft.hgmem import prompts
from memgraft.hgmem.memory import HypergraphMemory, MemoryInvariantError
from memgraft.hgmem.methods import run_method
from memgraft.models.llm.base import parse_json_as, schema_for
from tests.doubles import HGMemScript, ScriptedLLM

QUESTION = "Who did Ada Lovelace work with?"
SMALL = ["hgmem.max_step=2", "hgmem.top_entities=4", "hgmem.relations_per_entity=2", "hgmem.top_chunks=3",
         "hgmem.max_chunks_per_step=5"]


@pytest.fixture()
def settings3():
    return load_settings("local", SMALL)


def _enum(schema: dict, model: str) -> list[str]:
    """The names a schema lets ``model``'s ``entities`` hold."""
    items = schema["$defs"][model]["properties"]["entities"]["items"]
    return items["enum"] if "enum" in items else [items["const"]]


def test_the_schema_offers_only_the_names_given_and_refuses_others():
    names = ["Ada Lovelace", "Charles Babbage", 'The "Engine"']
    model = prompts.evolution_model(["p1"], True, names)
    schema = schema_for(model)
    assert sorted(_enum(schema, "PointInsert")) == sorted(names) == sorted(_enum(schema, "PointUpdate"))
    ok = '{"updates": [], "inserts": [{"description": "They met.", "entities": ["Ada Lovelace", "Charles Babbage"]}]}'
    assert parse_json_as(model, ok).inserts[0].entities == ["Ada Lovelace", "Charles Babbage"]
    with pytest.raises(ValueError):
        parse_json_as(model, ok.replace("Charles Babbage", "Atlantis"))
    with pytest.raises(ValueError):  # an update cannot widen a point with an invented entity either
        parse_json_as(model, '{"updates": [{"point_id": "p1", "description": "More.", "entities": ["Atlantis"]}]}')
    # one name cannot make a point: the schema offers no insert, and with no memory the step has nothing to do
    assert "inserts" not in schema_for(prompts.evolution_model(["p1"], True, ["Ada Lovelace"]))["properties"]
    assert not prompts.can_evolve([], True, ["Ada Lovelace"]) and prompts.can_evolve(["p1"], True, [])


class _Hallucinating(HGMemScript):
    """Every evolution's first reply names an entity the graph lacks beside a shown one; the retry is the script's."""

    def __init__(self):
        super().__init__()
        self.tried: set[str] = set()
        self.schemas: list[dict] = []

    def __call__(self, request):
        title = (request.json_schema or {}).get("title")
        prompt = request.messages[-1]["content"]
        if title in ("Evolution", "InsertOnly"):
            self.schemas.append(request.json_schema)
            if prompt not in self.tried:
                self.tried.add(prompt)
                return json.dumps({"inserts": [{"description": "Invented.",
                                                "entities": [self._entities(prompt)[0], "Atlantis"]}]})
        return super().__call__(request)


def test_an_entity_no_step_retrieved_never_becomes_a_vertex(world, settings3):
    llm = _Hallucinating()
    out = run_method("hgmem", QUESTION, world, ScriptedLLM(llm), settings3)
    names = {v.name for v in out.memory.vertices()}
    assert "Atlantis" not in names and names
    assert all(v.in_graph and world.has_entity(v.entity_id) for v in out.memory.vertices())
    out.memory.check_grounded(world.has_entity)
    # each step's evolve schema offered exactly: the entities it showed, both ends of the relations it showed,
    # and memory's own vertices
    evolving = [s for s in out.trace["steps"] if "shown" in s]
    assert len(llm.schemas) >= len(evolving) == 3
    for s in evolving:
        shown = s["shown"]
        ends = [e for r in shown["relation_ids"] for e in (world.relation(r)["source_id"], world.relation(r)["target_id"])]
        held = [v["entity_id"] for v in s["memory_before"]["vertices"]]
        expected = {world.entity(e)["name"] for e in [*shown["entity_ids"], *ends, *held]}
        offered = [sc for sc in llm.schemas if set(_enum(sc, "PointInsert")) == expected]
        assert offered, s["step"]


class _FromMemory(HGMemScript):
    """Step 0 inserts two points over four shown entities; step 1 (global, so nothing of memory is retrieved
    again) inserts one over an entity of each, and updates p1 with no new entity."""

    def __call__(self, request):
        title = (request.json_schema or {}).get("title")
        prompt = request.messages[-1]["content"]
        if title in ("Evolution", "InsertOnly"):
            if prompt.split("Current memory:\n", 1)[1].startswith("(empty)"):
                self.first = n = self._entities(prompt)[:4]
                return json.dumps({"inserts": [{"description": "First.", "entities": n[:2]},
                                               {"description": "Second.", "entities": n[2:4]}]})
            return json.dumps({"updates": [{"point_id": "p1", "description": "First, refined.", "entities": []}],
                               "inserts": [{"description": "Across.", "entities": [self.first[0], self.first[2]]}]})
        if title == "SufficiencyJudgement":
            return json.dumps({"sufficient": False, "concerns": [
                {"kind": "global", "point_ids": [], "subquery": "Manchester computers"}]})
        return super().__call__(request)


@pytest.mark.parametrize("script", [HGMemScript, _FromMemory])
def test_every_point_cites_chunks_and_relations_its_step_retrieved(world, settings3, script):
    s = settings3.model_copy(deep=True)
    s.hgmem.max_step = 1
    out = run_method("hgmem-no-merge", QUESTION, world, ScriptedLLM(script()), s)
    for step in out.trace["steps"]:
        before = {p["point_id"]: p for p in step["memory_before"]["points"]}
        after = HypergraphMemory.from_dict(step["memory_after"])
        touched = [*step["operations"]["inserts"], *step["operations"]["updates"]]
        assert touched, step["step"]
        retrieved_chunks = {c for sq in step["subqueries"] for c in sq["chunk_ids"]}
        retrieved_relations = {r for sq in step["subqueries"] for r in sq["relation_ids"]}
        for pid in touched:
            p, old = after.point(pid), before.get(pid, {"chunk_ids": [], "relation_ids": []})
            assert p.chunk_ids, (step["step"], pid)
            new_chunks = set(p.chunk_ids) - set(old["chunk_ids"])
            new_relations = set(p.relation_ids) - set(old["relation_ids"])
            assert new_chunks <= retrieved_chunks and new_relations <= retrieved_relations, (step["step"], pid)
            for r in new_relations:  # a relation a point cites joins two of its own entities
                rel = world.relation(r)
                assert {rel["source_id"], rel["target_id"]} <= set(p.vertex_ids)
        assert all(p.chunk_ids for p in after.active_points())
    if script is HGMemScript:  # its points join related entities: the relation check above ran on something
        assert any(p.relation_ids for p in out.memory.active_points())
    answer = out.trace["answer"]
    assert answer["point_ids"] and set(answer["point_ids"]) <= {p.point_id for p in out.memory.active_points()}


def test_check_grounded_refuses_an_invented_vertex_and_a_point_without_chunks():
    mem = HypergraphMemory()
    mem.add_vertex("e1", "A", True, ["c1"])
    mem.add_vertex("e2", "B", True, ["c2"])
    mem.insert("A and B.", ["e1", "e2"], ["c1"], 0)
    mem.check_grounded(lambda e: e in {"e1", "e2"})
    with pytest.raises(MemoryInvariantError, match="not an entity"):
        mem.check_grounded(lambda e: e == "e1")
    mem.insert("A and B again, unfolded.", ["e1", "e2"], [], 1, fold=False)
    with pytest.raises(MemoryInvariantError, match="cites no chunk"):
        mem.check_grounded(lambda e: True)
