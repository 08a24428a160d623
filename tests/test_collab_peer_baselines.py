"""The paper's peer baselines on the same stream and query interface: Mem0-style, Self-RAG-style, G-Memory-style."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from memgraft.collab.bank import MemoryBank
from memgraft.collab.evaluate.harness import LLM_METHODS, METHODS, EvalOptions, run_eval
from memgraft.collab.evaluate.peer_baselines import HierarchicalRetriever, Mem0Policy, SelfReflectRetriever
from memgraft.collab.types import MemoryGroup
from memgraft.collab.maintain.updater import Updater
from memgraft.models.reranker import CosineReranker
from tests.doubles import ScriptedLLM

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
OLD, NEW = "Protocol: every member uses qPCR as the primary assay.", "Protocol change: the primary assay is now Western blot."


def group(i: int, *memories: tuple[str, str]) -> MemoryGroup:
    return MemoryGroup(team="lab", group_id=f"g{i}", time=T0 + timedelta(days=i), memories=[
        {"memory_id": f"g{i}-m{j}", "type": kind, "author": "ana", "content": text}
        for j, (kind, text) in enumerate(memories)])


GROUPS = [group(0, ("team", OLD), ("individual", "Log: restocked the pipette tips in room 4.")),
          group(1, ("individual", "Observation: the centrifuge in room 2 makes a rattling noise."),
                ("individual", "Log: calibrated the plate reader.")),
          group(2, ("team", NEW), ("individual", "Log: ordered more agarose gel."))]


def scripted(request) -> str:
    """Mem0: the stored qPCR protocol is updated by the Western blot one; reflection: the qPCR one is stale."""
    prompt, title = request.messages[-1]["content"], (request.json_schema or {}).get("title")
    if title == "MemoryOperation":
        stored, facts = prompt.split("Stored memory", 1)[1].split("Newer facts", 1)
        return json.dumps({"operation": "UPDATE" if "qPCR" in stored and "Western blot" in facts else "NOOP"})
    if title == "StillValid":
        others, target = prompt.rsplit("TARGET (", 1)
        return json.dumps({"valid": not ("qPCR" in target and "Western blot" in others)})
    return json.dumps({"answer": "ok"})


@pytest.fixture()
def raw(tmp_path, embedder):
    b = MemoryBank(tmp_path / "raw.sqlite", embedder)
    for g in GROUPS:
        b.apply_group(g)
    yield b
    b.close()


def test_mem0_updates_what_a_newer_fact_supersedes_and_logs_it(tmp_path, embedder, settings):
    llm = ScriptedLLM(scripted)
    with MemoryBank(tmp_path / "mem0.sqlite", embedder) as bank:
        updater = Updater(bank, Mem0Policy(llm, settings.generation), settings.hicomer)
        for g in GROUPS:
            updater.apply(g)
        valid = {m.memory_id: m.valid for m in bank.memories("lab")}
        assert valid["g0-m0"] is False and valid["g2-m0"] is True and sum(valid.values()) == 5
        [d] = [d for d in bank.decisions("lab", "g0-m0") if str(d.action) in ("revise", "Action.revise")]
        assert d.decided_by == "mem0:scripted" and "UPDATE" in d.reason
    asked = [r for r in llm.requests if (r.json_schema or {}).get("title") == "MemoryOperation"]
    assert asked and all("Stored memory" in r.messages[-1]["content"] for r in asked)


def test_self_reflection_drops_what_the_llm_judges_stale_and_nothing_else(raw, settings):
    llm = ScriptedLLM(scripted)
    got = [r.memory.memory_id for r in SelfReflectRetriever(raw, llm, settings.generation, top_n=6).retrieve(
        "lab", "Which primary assay does the team use?", 6)]
    assert "g0-m0" not in got and "g2-m0" in got and len(got) == 5  # one judged stale, the rest kept
    assert len(llm.requests) == 6 and all("TARGET" in r.messages[-1]["content"] for r in llm.requests)


def test_hierarchical_retrieval_picks_the_relevant_groups_first(raw):
    got = [r.memory.memory_id for r in HierarchicalRetriever(raw, groups=1).retrieve("lab", "centrifuge rattling noise", 5)]
    assert got[0] == "g1-m0" and set(got) == {"g1-m0", "g1-m1"}  # only the best group's memories


class _KnowsTheGold:
    """A scripted LLM for the generated stream that knows when the gold outdates each memory (by its text):
    reflection calls a TARGET stale, and Mem0 UPDATEs a stored memory, once the gold has outdated it."""

    def __init__(self, dataset):
        self.outdated: dict[str, list[datetime]] = {}
        for m in dataset.memories:
            if m.get("outdated_at"):
                self.outdated.setdefault(m["original"], []).append(_naive(m["outdated_at"]))

    def stale(self, text: str, at: datetime) -> bool:
        return any(t <= at for t in self.outdated.get(text.strip(), []))

    def __call__(self, request) -> str:
        prompt, title = request.messages[-1]["content"], (request.json_schema or {}).get("title")
        if title == "StillValid":
            at = _naive(prompt.split("Question (", 1)[1].split("):", 1)[0])
            return json.dumps({"valid": not self.stale(prompt.rsplit("TARGET (", 1)[1].split("): ", 1)[1], at)})
        if title == "MemoryOperation":
            stored, facts = prompt.split("Stored memory (", 1)[1].split("\n\nNewer facts (", 1)
            stale = self.stale(stored.split("): ", 1)[1], _naive(facts.split("):", 1)[0]))
            return json.dumps({"operation": "UPDATE" if stale else "NOOP"})
        return json.dumps({"answer": "ok"})


def _naive(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.strip()).replace(tzinfo=None)


def test_the_peer_baselines_rank_as_documented_against_dense_and_the_llm_ones_run_only_when_named(
        tmp_path, settings, embedder):
    """On a generated stream, with an LLM that knows the gold: Self-RAG's ranking is dense's with what its
    reflection judged stale left out, in dense order, so it retrieves no outdated memory where dense does;
    G-Memory's comes from at most its three groups, so it differs from dense wherever dense's spans more; Mem0's
    updates outdate what it judged superseded, so its bank's flags are the gold end state's."""
    from memgraft.collab.data.generator import generate

    assert set(LLM_METHODS) <= set(METHODS) and not set(LLM_METHODS) & set(EvalOptions().methods)
    assert "g-memory" in EvalOptions().methods
    dataset = generate(seed=1, teams=2, groups=4)
    oracle = _KnowsTheGold(dataset)
    report = run_eval(dataset, settings, tmp_path,
                      EvalOptions(methods=("dense", "g-memory", "self-rag", "mem0"), test_fraction=1.0),
                      embedder=embedder, reranker=CosineReranker(embedder), llm=ScriptedLLM(oracle))
    assert report.methods["mem0"]["updater"] == "mem0" and "mem0:scripted" in report.updaters
    ranked = {(r["method"], r["id"]): r["retrieved"] for r in report.questions}
    memories = {m["memory_id"]: m for m in dataset.memories}
    questions = dataset.questions
    assert questions and all((m, q["id"]) in ranked for m in report.methods for q in questions)

    dropped = 0
    for q in questions:
        dense = ranked[("dense", q["id"])]
        kept = [i for i in dense if not oracle.stale(memories[i]["original"], _naive(q["time"]))]
        assert ranked[("self-rag", q["id"])] == kept, q["id"]  # k = 10 = its top_n: dense's whole list
        dropped += len(dense) - len(kept)
    assert dropped and report.methods["self-rag"]["orr@5"] == 0.0 < report.methods["dense"]["orr@5"]

    wider = 0
    for q in questions:
        groups = {memories[i]["group_id"] for i in ranked[("g-memory", q["id"])]}
        assert ranked[("g-memory", q["id"])] and len(groups) <= 3, q["id"]
        if len({memories[i]["group_id"] for i in ranked[("dense", q["id"])]}) > 3:
            wider += 1
            assert ranked[("g-memory", q["id"])] != ranked[("dense", q["id"])], q["id"]
    assert wider  # questions where the group tier changes the ranking

    mem0, raw = report.validity["mem0:scripted"], report.validity["raw"]
    assert raw["stale_left_valid"] > 0 and mem0["stale_left_valid"] == mem0["valid_outdated"] == 0, (mem0, raw)
