"""HGMem's loop, methods and driver with a scripted LLM double, plus one run on the real SmolLM2."""

from __future__ import annotations

import json

import pytest

from memgraft.config import load_settings
from memgraft.hgmem import prompts
from memgraft.hgmem.loop import VARIANTS, HGMemReasoner
from memgraft.hgmem.memory import HypergraphMemory
from memgraft.hgmem.methods import METHODS, answer_record, run_method
from memgraft.models.llm.session import LLMSession, StructuredOutputError
from tests.doubles import HGMemScript, ScriptedLLM


@pytest.fixture()
def settings3():
    return load_settings("local", ["hgmem.max_step=2", "hgmem.top_entities=4", "hgmem.relations_per_entity=2",
                                   "hgmem.top_chunks=3", "hgmem.max_chunks_per_step=5"])


def test_the_loop_takes_the_known_path(world, settings3):
    llm = ScriptedLLM(HGMemScript())
    session = LLMSession(llm, settings3.generation)
    out = HGMemReasoner(world, session, settings3).run("Who did Ada Lovelace work with?")
    steps = out.trace["steps"]
    assert out.answer == "scripted answer" and out.steps == 3 and out.trace["stopped"] == "step limit"
    # step 0: the question itself, one insertion
    assert steps[0]["subqueries"][0]["kind"] == "initial" and steps[0]["operations"]["inserts"] == ["p1"]
    # step 1: a local concern about p1; its entities lie within 2 hops of p1's vertices
    sq1 = steps[1]["subqueries"][0]
    assert sq1["kind"] == "local" and sq1["point_ids"] == ["p1"]
    p1_vertices = steps[0]["memory_after"]["points"]["p1"]["vertex_ids"] if isinstance(
        steps[0]["memory_after"]["points"], dict) else next(
        p["vertex_ids"] for p in steps[0]["memory_after"]["points"] if p["point_id"] == "p1")
    near = world.neighbours(p1_vertices, hops=2)
    assert sq1["entity_ids"] and set(sq1["entity_ids"]) <= set(near)
    ops1 = steps[1]["operations"]
    assert ops1["updates"] == ["p1"] and ops1["inserts"] == ["p2"] and ops1["merges"] == [{"into": "p3", "from": ["p1", "p2"]}]
    # step 2: a global concern, which excludes entities already in memory
    sq2 = steps[2]["subqueries"][0]
    memory_before = HypergraphMemory.from_dict(steps[2]["memory_before"])
    assert sq2["kind"] == "global" and not set(sq2["entity_ids"]) & set(memory_before.entity_ids())
    final = out.memory
    final.check_invariants()
    p3 = final.point("p3")
    assert p3.merged_from == ["p1", "p2"] and set(p3.vertex_ids) >= set(final.point("p1").vertex_ids)
    assert not final.point("p1").active and final.point("p4").active
    # every step counted its calls: 1 evolve; then judge + evolve + merge twice; then the answer
    assert [s["llm_calls"] for s in steps] == [1, 3, 3] and out.usage.calls == 8
    assert sum(s["prompt_tokens"] for s in steps) < out.usage.prompt_tokens  # the answer's tokens on top


def test_ablations_change_the_path(world, settings3):
    for method, check in [
        ("hgmem-no-merge", lambda ops: "merges" not in ops[1]),
        ("hgmem-no-update", lambda ops: ops[1]["updates"] == []),
        ("hgmem-global-only", lambda ops: True),
        ("hgmem-local-only", lambda ops: True),
    ]:
        out = run_method(method, "Who did Ada Lovelace work with?", world, ScriptedLLM(HGMemScript()), settings3)
        ops = [s["operations"] for s in out.trace["steps"]]
        kinds = [sq["kind"] for s in out.trace["steps"] for sq in s["subqueries"]]
        assert check(ops), method
        if method == "hgmem-global-only":
            assert kinds == ["initial", "global", "global"]
        if method == "hgmem-local-only":
            assert kinds == ["initial", "local", "local"]


def test_every_method_runs(world, settings3, tmp_path):
    for method in METHODS:
        row = answer_record({"id": f"q-{method}", "question": "Who did Ada Lovelace work with?", "answer": "Babbage"},
                            method, world, ScriptedLLM(HGMemScript()), settings3, tmp_path)
        assert row["error"] is None and row["answer"] == "scripted answer" and row["answer"] and row["llm_calls"] >= 1
        assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0 and row["method"] == method
        assert json.loads(open(row["trace"]).read())["question"] == "Who did Ada Lovelace work with?"
        assert row["answer"] == "scripted answer" and row["steps"] >= 1
        if method.startswith("hgmem"):  # the paper's Table 3: entities per memory point of the final memory
            final = json.loads(open(row["trace"]).read())["final_memory"]
            points = [p for p in final["points"] if p["merged_into"] is None]  # merged points are not active
            assert row["memory_points"] == len(points) >= 1
            assert row["hyperedge_size"] == sum(len(p["vertex_ids"]) for p in points) / len(points) >= 2
        else:
            assert "hyperedge_size" not in row
    naive = json.loads(open(tmp_path / "q-naive.naive.json").read())
    assert naive["retrieved"]["chunk_ids"][0] == "c0"
    assert (tmp_path / "q-hgmem.hgmem.html").exists()


def test_a_question_that_fails_gets_an_error_line(world, settings3, tmp_path):
    llm = ScriptedLLM(HGMemScript(fail_on="Bletchley"))
    row = answer_record({"id": "bad", "question": "What happened at Bletchley Park?"}, "hgmem", world, llm, settings3, tmp_path)
    assert row["answer"] is None and row["error"].startswith("StructuredOutputError: evolution at step 0")
    ok = answer_record({"id": "good", "question": "Who did Ada Lovelace work with?"}, "hgmem", world, llm, settings3, tmp_path)
    assert ok["error"] is None


def test_invalid_json_is_retried_then_raised(world, settings3):
    session = LLMSession(ScriptedLLM(["nope", '{"answer": "ok"}']), settings3.generation)
    assert session.ask(prompts.Answer, [{"role": "user", "content": "q"}], "answer").answer == "ok"
    assert session.usage.calls == 2
    bad = LLMSession(ScriptedLLM(["x", "y", "z"]), settings3.generation)
    with pytest.raises(StructuredOutputError, match="after 3 attempts"):
        bad.ask(prompts.Answer, [{"role": "user", "content": "q"}], "answer")


def test_variants_are_the_papers_ablations():
    assert set(METHODS) == {"hgmem", "hgmem-no-merge", "hgmem-no-update", "hgmem-local-only", "hgmem-global-only",
                            "naive", "graph"}
    assert VARIANTS["hgmem-no-merge"].merge is False and VARIANTS["hgmem-no-update"].update is False


class _SameInsert(HGMemScript):
    """Every evolution inserts over the same two entities (the first step's), and the judge never names a concern."""

    def __init__(self):
        super().__init__()
        self.first: list[str] | None = None

    def __call__(self, request):
        title = (request.json_schema or {}).get("title")
        if title == "SufficiencyJudgement":
            return json.dumps({"sufficient": False, "concerns": []})
        if title in ("Evolution", "InsertOnly"):
            self.first = self.first or self._entities(request.messages[-1]["content"])[:2]
            out = {"inserts": [{"description": f"Fact {self.judgements} on the same pair.", "entities": self.first}]}
            self.judgements += 1
            return json.dumps(out if title == "InsertOnly" else {"updates": [], **out})
        return super().__call__(request)


def _descriptions(snapshot: dict) -> dict[str, str]:
    return {p["point_id"]: p["description"] for p in snapshot["points"]}


def test_no_update_never_rewrites_a_point_even_over_the_same_entities(world, settings3):
    """Issue 14: an insert over an existing vertex set used to become an update of that point."""
    out = run_method("hgmem-no-update", "Who did Ada Lovelace work with?", world, ScriptedLLM(_SameInsert()), settings3)
    steps = out.trace["steps"]
    assert len(steps) == 3
    for s in steps:
        before, after = _descriptions(s["memory_before"]), _descriptions(s["memory_after"])
        assert all(after.get(pid) == text for pid, text in before.items() if pid in after), s["step"]
        assert s["operations"].get("updates", []) == []
    inserted = [pid for s in steps for pid in s["operations"]["inserts"]]
    assert len(inserted) == len(set(inserted)) == 3  # three points over one vertex set, none folded into another
    # the full method folds the same inserts into one point, by update
    full = run_method("hgmem-no-merge", "Who did Ada Lovelace work with?", world, ScriptedLLM(_SameInsert()), settings3)
    assert len({pid for s in full.trace["steps"] for pid in s["operations"]["inserts"]}) == 1


def test_local_only_never_explores_globally(world, settings3, monkeypatch):
    """Issue 14: with no concern, or a local subquery with no seeds, local-only used to search the whole graph."""
    calls: list[str] = []
    real = world.search_entities
    monkeypatch.setattr(world, "search_entities", lambda text, *a, **k: calls.append(text) or real(text, *a, **k))
    out = run_method("hgmem-local-only", "Who did Ada Lovelace work with?", world, ScriptedLLM(_SameInsert()), settings3)
    kinds = [sq["kind"] for s in out.trace["steps"] for sq in s["subqueries"]]
    assert kinds == ["initial", "local", "local"]
    assert len(calls) == 1  # the initial retrieval (t = 0) only
    calls.clear()
    run_method("hgmem", "Who did Ada Lovelace work with?", world, ScriptedLLM(_SameInsert()), settings3)
    assert len(calls) == 3  # the full method explores when the judge names no concern


def test_the_default_runs_the_papers_four_rounds(world):
    """t = 0 (initial retrieval) to t = 3, the paper's best setting; then the answer."""
    s = load_settings("local", ["hgmem.top_entities=4", "hgmem.relations_per_entity=2", "hgmem.top_chunks=3",
                                "hgmem.max_chunks_per_step=5"])
    assert s.hgmem.max_step == 3
    out = HGMemReasoner(world, LLMSession(ScriptedLLM(HGMemScript()), s.generation), s).run(
        "Who did Ada Lovelace work with?")
    assert out.steps == 4 and [r["step"] for r in out.trace["steps"]] == [0, 1, 2, 3]
    assert out.trace["stopped"] == "step limit"
