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


SMALL = ["hgmem.max_step=2", "hgmem.top_entities=4", "hgmem.relations_per_entity=2", "hgmem.top_chunks=3",
         "hgmem.max_chunks_per_step=5"]


@pytest.fixture()
def settings3():
    return load_settings("local", SMALL)


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


QUESTION = "Who did Ada Lovelace work with?"


def _scripted(method, world, settings):
    """One run on HGMemScript's known path, and the schema of every request it sent, in order."""
    llm = ScriptedLLM(HGMemScript())
    out = run_method(method, QUESTION, world, llm, settings)
    return out, [(r.json_schema or {}).get("title") for r in llm.requests]


def _ops(out, name):
    return [x for s in out.trace["steps"] for x in s["operations"].get(name, [])]


def _later_kinds(out):
    """The kinds of the subqueries after step 0, step by step."""
    return [[sq["kind"] for sq in s["subqueries"]] for s in out.trace["steps"][1:]]


def test_each_ablation_removes_its_part_and_only_that(world, settings3):
    full, full_titles = _scripted("hgmem", world, settings3)
    # the script drives the full method through every part an ablation takes away, so each check below can fail
    assert _ops(full, "merges") and _ops(full, "updates") and "Merging" in full_titles and "Evolution" in full_titles
    assert _later_kinds(full) == [["local"], ["global"]]

    out, titles = _scripted("hgmem-no-merge", world, settings3)
    assert "Merging" not in titles and not _ops(out, "merges")
    assert all(p.active and not p.merged_from for p in out.memory.all_points())
    assert _ops(out, "updates") == _ops(full, "updates") and _later_kinds(out) == _later_kinds(full)

    out, titles = _scripted("hgmem-no-update", world, settings3)
    assert "Evolution" not in titles and titles.count("InsertOnly") == full_titles.count("Evolution") + 1
    assert not _ops(out, "updates")
    assert all(not p.history and not p.updated_steps for p in out.memory.all_points())
    assert _ops(out, "merges") and _later_kinds(out) == _later_kinds(full)

    # global-only: step 1's judge asks about p1 locally, yet every subquery searches beyond memory
    out, _ = _scripted("hgmem-global-only", world, settings3)
    assert _later_kinds(out) == [["global"], ["global"]]
    for s in out.trace["steps"][1:]:
        in_memory = set(HypergraphMemory.from_dict(s["memory_before"]).entity_ids())
        for sq in s["subqueries"]:
            assert sq["point_ids"] == [] and sq["entity_ids"] and not set(sq["entity_ids"]) & in_memory, s["step"]
    assert _ops(out, "merges") and _ops(out, "updates")

    # local-only: step 2's judge asks to explore, yet every subquery stays near the memory points it names.
    # Within one hop: by step 2 memory spans both of the world's clusters, and two hops from it reach almost
    # every entity, so a local subquery that searched the whole graph would pass a two-hop check
    one_hop = load_settings("local", [*SMALL, "hgmem.local_hops=1"])
    out, _ = _scripted("hgmem-local-only", world, one_hop)
    assert _later_kinds(out) == [["local"], ["local"]]
    for s in out.trace["steps"][1:]:
        before = HypergraphMemory.from_dict(s["memory_before"])
        for sq in s["subqueries"]:
            assert sq["point_ids"] and all(before.point(p).active for p in sq["point_ids"]), s["step"]
            seeds = [v.entity_id for p in sq["point_ids"] for v in before.vertices_of(p)]
            near = world.neighbours(seeds, hops=1)
            assert sq["entity_ids"] and set(sq["entity_ids"]) <= set(near), s["step"]
    assert _ops(out, "merges") and _ops(out, "updates")
    # a variant added without a check here fails this line
    assert set(VARIANTS) == {"hgmem", "hgmem-no-merge", "hgmem-no-update", "hgmem-global-only", "hgmem-local-only"}


def test_every_method_runs(world, settings3, tmp_path):
    for method in METHODS:
        row = answer_record({"id": f"q-{method}", "question": "Who did Ada Lovelace work with?", "answer": "Babbage"},
                            method, world, ScriptedLLM(HGMemScript()), settings3, tmp_path)
        assert row["error"] is None and row["answer"] == "scripted answer" and row["answer"] and row["llm_calls"] >= 1
        assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0 and row["method"] == method
        assert json.loads(open(row["trace"]).read())["question"] == "Who did Ada Lovelace work with?"
        assert row["answer"] == "scripted answer" and row["steps"] >= 1
        # the memory's shape is reported for HGMem's methods only (its values: test_the_hyperedge_size_...)
        assert ("hyperedge_size" in row and "memory_points" in row) == method.startswith("hgmem")
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


class _KnownSizes(HGMemScript):
    """Step 0 inserts a point over three shown entities (A, B, C), step 1 one over two (C, from memory, and D,
    newly shown) and, where merging runs, merges the two; step 2 finds memory sufficient. The points' sizes
    are fixed by the script alone."""

    first: list[str] = []

    def __call__(self, request):
        title = (request.json_schema or {}).get("title")
        prompt = request.messages[-1]["content"]
        if title == "SufficiencyJudgement":
            done = "[p2]" in prompt or "[p3]" in prompt
            return json.dumps({"sufficient": done, "concerns": [] if done else [
                {"kind": "global", "point_ids": [], "subquery": "what else is relevant"}]})
        if title in ("Evolution", "InsertOnly"):
            empty = prompt.split("Current memory:\n", 1)[1].startswith("(empty)")
            shown = self._entities(prompt)
            if empty:
                self.first = names = shown[:3]
            else:
                names = [self.first[2], next(n for n in shown if n not in self.first)]
            out = {"inserts": [{"description": f"A fact over {len(names)} names.", "entities": names}]}
            return json.dumps(out if title == "InsertOnly" else {"updates": [], **out})
        if title == "Merging":
            both = "[p1]" in prompt and "[p2]" in prompt
            return json.dumps({"merges": [{"point_ids": ["p1", "p2"], "description": "Together."}] if both else []})
        return super().__call__(request)


@pytest.mark.parametrize("method, points, size", [
    ("hgmem-no-merge", 2, 2.5),  # p1 over 3 entities, p2 over 2: mean 2.5 (4 distinct entities over 2 points: 2.0)
    ("hgmem", 1, 4.0),  # p3 = p1 + p2 over A, B, C, D; the merged-away parents do not count (with them: 3.0)
])
def test_the_hyperedge_size_is_the_mean_entities_per_active_point(world, settings3, tmp_path, method, points, size):
    """The paper's Table 3 column, on a memory whose points' sizes the script fixes."""
    row = answer_record({"id": "sizes", "question": QUESTION}, method, world, ScriptedLLM(_KnownSizes()), settings3,
                        tmp_path)
    assert row["error"] is None and row["steps"] == 3
    assert row["memory_points"] == points and row["hyperedge_size"] == size


def test_each_round_is_told_as_it_ends(world, settings3, tmp_path):
    """Issue 34: a newcomer sees every round as it happens, not one line after minutes of silence."""
    llm, told = ScriptedLLM(HGMemScript()), []
    row = answer_record({"id": "r", "question": QUESTION}, "hgmem", world, llm, settings3, tmp_path,
                        lambda line: told.append((len(llm.requests), line)))
    steps = json.loads(open(row["trace"]).read())["steps"]
    n = [len({e for sq in s["subqueries"] for e in sq["entity_ids"]}) for s in steps]
    # told after each round's last LLM call (1 evolve; judge, evolve, merge; again), before the answer's
    assert [(k, line.rsplit(" (", 1)[0]) for k, line in told] == [
        (1, f"round 1 of 3: 1 subquery, {n[0]} entities, 0 points updated, 1 inserted"),
        (4, f"round 2 of 3: 1 subquery, {n[1]} entities, 1 point updated, 1 inserted, 1 merge"),
        (7, f"round 3 of 3: 1 subquery, {n[2]} entities, 0 points updated, 1 inserted")] and len(llm.requests) == 8
    told.clear()
    answer_record({"id": "s", "question": QUESTION}, "hgmem", world, ScriptedLLM(_KnownSizes()), settings3, tmp_path,
                  lambda line: told.append((0, line)))
    assert told[-1][1].startswith("round 3 of 3: memory suffices")
