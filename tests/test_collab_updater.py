"""HiCoMER's updater: intra and inter levels, the decision log, never a guess, and the rule-based baseline."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memgraft.collab.evaluate import metrics as M
from memgraft.collab.bank import MemoryBank
from memgraft.collab.data import revised_text
from memgraft.collab.data.generator import generate
from memgraft.collab.maintain.judgement import Judgement, Target
from memgraft.collab.maintain.policies import LLMPolicy, RulesPolicy, make_policy, target_from_gold
from memgraft.collab.maintain.prompts import MaintenanceJudgement, judge_messages
from memgraft.collab.types import Action, Memory, MemoryGroup, Relation
from memgraft.collab.maintain.updater import MemoEmbedder, Updater
from memgraft.config import GenerationSettings, HiCoMERSettings, Settings
from memgraft.models.llm.session import StructuredOutputError
from tests.doubles import HashEmbedder, ScriptedLLM

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)



def group(gid: str, hours: float, *memories: tuple[str, str, str], team: str = "ops") -> MemoryGroup:
    return MemoryGroup(team=team, group_id=gid, time=T0 + timedelta(hours=hours), memories=[
        {"memory_id": mid, "type": typ, "author": "lead" if typ == "team" else "bob", "content": text}
        for mid, typ, text in memories])


def target_text(request) -> str:
    return request.messages[-1]["content"].split('"', 2)[1]


def answer(relation: str, action: str, maintained: str = "", reason: str = "scripted") -> str:
    return json.dumps({"relation": relation, "action": action, "maintained": maintained, "reason": reason})


def script(rules: dict[str, str]):
    """Answer by the target's text: the first rule whose key is in it; neutral/keep otherwise."""
    def reply(request):
        text = target_text(request)
        return next((a for key, a in rules.items() if key in text), answer("neutral", "keep"))
    return reply


@pytest.fixture()
def bank(tmp_path):
    b = MemoryBank(tmp_path / "bank.sqlite", MemoEmbedder(HashEmbedder()))
    yield b
    b.close()


def llm_updater(bank, rules: dict[str, str], retries: int = 1) -> tuple[Updater, ScriptedLLM]:
    llm = ScriptedLLM(script(rules))
    policy = LLMPolicy(llm, GenerationSettings(json_retries=retries, max_new_tokens=64))
    return Updater(bank, policy, HiCoMERSettings(history_top_k=5)), llm


G1 = group("g1", 0, ("m1", "team", "The weekly meeting is at 9am in room A."),
           ("i1", "individual", "I booked room B for the weekly meeting at 9am."),
           ("i2", "individual", "Ordered new chairs for the lab."))
G2 = group("g2", 24, ("m2", "team", "From now on the weekly meeting is at 10am in room C."),
           ("i3", "individual", "Printed the agenda for the weekly meeting."))


# -- the two levels, with a scripted LLM ----------------------------------------------------------


def test_intra_team_memory_overrules_individual_of_the_same_group(bank):
    up, llm = llm_updater(bank, {"room B": answer("contradiction", "revise")})
    report = up.apply(G1)
    assert not report.skipped and report.n_history == 0  # nothing earlier
    assert [(d.memory_id, d.level) for d in report.decisions] == [("i1", "intra"), ("i2", "intra")]
    assert len(llm.calls) == 1 and len(llm.calls[0]) == 2  # every target of the step in one batched call
    prompt = llm.calls[0][0].messages[-1]["content"]
    assert "same time" in prompt and "The weekly meeting is at 9am in room A." in prompt  # judged against m1
    i1 = bank.memory("ops", "i1")
    assert not i1.valid and i1.action is Action.revise and i1.relation is Relation.contradiction
    # an empty revision text gets the datasets' marking, citing the team memory
    assert i1.maintained == revised_text(i1.original, "2024-03-01T09:00:00", "m1")
    assert "The weekly meeting is at 9am in room A." not in i1.maintained  # named by id, never pasted
    assert bank.memory("ops", "i2").valid and bank.memory("ops", "m1").valid
    assert report.usage.calls == 2 and report.usage.prompt_tokens > 0
    assert {d.decided_by for d in report.decisions} == {"llm:scripted"}


def test_inter_earlier_memory_revised_by_a_later_team_memory(bank):
    up, llm = llm_updater(bank, {"9am in room A": answer("contradiction", "revise", "[Outdated] meeting moved"),
                                 "room B": answer("contradiction", "revise")})
    up.apply(G1)
    report = up.apply(G2)
    inter = {d.memory_id: d for d in report.decisions if d.level == "inter"}
    assert report.n_history == 2 and set(inter) == {"m1", "i2"}  # H_t: the earlier *valid* memories (not i1)
    m1 = bank.memory("ops", "m1")
    assert not m1.valid and m1.maintained == "[Outdated] meeting moved" and m1.original.startswith("The weekly")
    assert inter["m1"].valid_before and not inter["m1"].valid_after and inter["m1"].decided_at == G2.time
    # the maintained group is what earlier memories are judged against
    request = next(r for r in llm.calls[-1] if target_text(r).startswith("The weekly meeting is at 9am"))
    assert "From now on the weekly meeting is at 10am in room C." in request.messages[-1]["content"]
    assert "later" in request.messages[-1]["content"]


def test_outdated_memories_are_not_judged_again(bank):
    up, _ = llm_updater(bank, {"room B": answer("contradiction", "revise")})
    up.apply(G1)
    report = up.apply(G2)
    assert "i1" not in {d.memory_id for d in report.decisions}  # revised in g1: outdated, out of H_t


def test_keep_leaves_the_text_and_every_decision_is_logged(bank):
    up, _ = llm_updater(bank, {"room B": answer("compatible", "keep", "some rewrite the model should not make"),
                               "chairs": answer("neutral", "revise", "a revision without a contradiction")})
    report = up.apply(G1)
    assert [d.action for d in report.decisions] == [Action.keep, Action.keep]  # revise + neutral -> keep
    for mid in ("i1", "i2"):
        m = bank.memory("ops", mid)
        assert m.maintained == m.original and m.valid
    log = bank.decisions("ops")
    assert [d.decision_id for d in log] == [d.decision_id for d in report.decisions]
    assert all(d.before == d.after for d in log)


def test_invalid_json_raises_naming_the_target_and_writes_nothing(bank):
    up, llm = llm_updater(bank, {"room B": "this is not json"}, retries=2)
    with pytest.raises(StructuredOutputError) as err:
        up.apply(G1)
    message = str(err.value)
    assert "'i1'" in message and "'g1'" in message and "3 attempts" in message
    assert len(llm.calls) == 3  # the first try and two retries
    assert not bank.is_applied("ops", "g1") and bank.memory("ops", "m1") is None and bank.teams() == []


def test_an_applied_group_is_skipped(bank):
    up, llm = llm_updater(bank, {})
    up.apply(G1)
    calls = len(llm.calls)
    again = up.apply(G1)
    assert again.skipped and again.decisions == [] and len(llm.calls) == calls
    assert len(bank.decisions("ops")) == 2


def test_group_without_team_memories_has_no_intra_step(bank):
    up, llm = llm_updater(bank, {})
    report = up.apply(group("g1", 0, ("i1", "individual", "note one"), ("i2", "individual", "note two")))
    assert report.decisions == [] and llm.calls == []


def test_transaction_reuses_the_updaters_vectors(tmp_path):
    inner = HashEmbedder()
    bank = MemoryBank(tmp_path / "b.sqlite", MemoEmbedder(inner))
    up, _ = llm_updater(bank, {"room B": answer("contradiction", "revise")})
    up.apply(G1)
    texts = [t for call in inner.calls for t in call]
    assert len(texts) == len(set(texts))  # each text embedded once: the write looked them up
    bank.close()


def test_prompt_and_schema():
    schema = MaintenanceJudgement.model_json_schema()
    assert set(schema["required"]) == {"relation", "action", "maintained", "reason"}
    t = target_from_gold(generate(seed=0, teams=1, groups=3).gold[0])
    messages = judge_messages(t)
    assert messages[0]["role"] == "system" and t.memory.maintained in messages[1]["content"]


def test_make_policy():
    s = Settings()
    s.hicomer.updater_policy = "rules"
    assert isinstance(make_policy(s), RulesPolicy)
    s.hicomer.updater_policy = "llm"
    p = make_policy(s, llm=ScriptedLLM([]))
    assert isinstance(p, LLMPolicy) and p.name == "llm:scripted"


# -- the rule-based baseline ---------------------------------------------------------------------


def mem(mid: str, typ: str, text: str, hours: float = 0) -> Memory:
    t = T0 + timedelta(hours=hours)
    return Memory(memory_id=mid, team="t", group_id="g", type=typ, author="a", original=text, maintained=text,
                  time=t, relation=None, action=None, valid=True, maintained_at=t)


HAND_CASES = [
    # target (type, text), reference (type, text), expected relation, expected action
    (("individual", "Scheduled another Compound A synthesis for Monday."),
     ("team", "Compound A is banned; stop synthesis."), "contradiction", "revise"),
    (("team", "The weekly meeting is at 9am in room A."),
     ("team", "From now on the weekly meeting is at 10am in room B."), "contradiction", "revise"),
    (("individual", "Ran the incubation at 37 °C as the protocol says."),
     ("team", "Protocol change: the incubation temperature is now 30 °C."), "contradiction", "revise"),
    (("individual", "Deployed the build to eu-west-1 as planned."),
     ("team", "Decision: the deployment region is eu-west-1."), "compatible", "keep"),
    (("individual", "Restocked the gloves in the supply room."),
     ("team", "Decision: the deployment region is eu-west-1."), "neutral", "keep"),
    # an individual note does not overrule a team protocol: the conflict is recorded, the protocol kept
    (("team", "Protocol: every member uses ELISA as the primary assay."),
     ("individual", "Log: today's experiment used qPCR as the primary assay."), "contradiction", "keep"),
    # two event logs with different numbers are not a change of state
    (("individual", "Log: ordered 12 boxes of pipette tips."),
     ("individual", "Log: ordered 30 boxes of pipette tips."), "compatible", "keep"),
    # ... unless the newer note says the state changed
    (("individual", "Observation: the kettle in staff room 5 is fine."),
     ("individual", "Observation: the kettle in staff room 5 is broken now."), "contradiction", "revise"),
    # known limits of the baseline, kept visible: a state said without "is" gives no claim to compare,
    # and a paraphrase sharing few words looks like another topic
    pytest.param(("individual", "Observation: the kettle in staff room 5 works."),
                 ("individual", "Observation: the kettle in staff room 5 is broken now."), "contradiction", "revise",
                 marks=pytest.mark.xfail(strict=True, reason="no claim in 'X works'")),
    pytest.param(("team", "For what football group did Ze Pedro play? C.D. Montijo."),
                 ("team", "Which football team did Jose Pedro Alves Salazar play on? Barreirense."),
                 "contradiction", "revise", marks=pytest.mark.xfail(strict=True, reason="paraphrase, few shared words")),
]


@pytest.mark.parametrize("target,reference,relation,action", HAND_CASES)
def test_rules_policy_hand_cases(target, reference, relation, action):
    t = Target("inter", mem("t", *target), (mem("r", *reference, hours=24),), T0 + timedelta(hours=24))
    [j] = RulesPolicy().judge([t])
    assert (str(j.relation), str(j.action)) == (relation, action), j.reason
    if action == "revise":
        assert j.maintained == revised_text(target[1], "2024-03-02T09:00:00", "r")
    else:
        assert j.maintained == target[1]


def score_on_gold(policy, gold) -> tuple[dict, float]:
    judgements = policy.judge([target_from_gold(r) for r in gold])
    key = [(r["group_id"], r["memory_id"]) for r in gold]
    pred_rel = {k: str(j.relation) for k, j in zip(key, judgements)}
    pred_m = {k: {"relation": str(j.relation), "action": str(j.action), "valid": j.action is Action.keep}
              for k, j in zip(key, judgements)}
    gold_rel = {k: r["relation"] for k, r in zip(key, gold)}
    gold_m = {k: {"relation": r["relation"], "action": r["action"], "valid": r["valid"]} for k, r in zip(key, gold)}
    return M.conflict_f1(pred_rel, gold_rel), M.maintenance_accuracy(pred_m, gold_m)


def test_rules_policy_on_generated_gold_labels():
    # Measured on seeds 0-3 (8 teams x 20 groups each): Conflict F1 1.00, maintenance accuracy 1.00 --
    # the generator states values in the plain patterns the rules read. On real TimeQA text the same
    # rules score F1 ~0.88 (see the report), so the floor here only guards against regressions.
    data = generate(seed=7, teams=4, groups=15)
    f1, accuracy = score_on_gold(RulesPolicy(), data.gold)
    assert f1["n"] == len(data.gold) > 200
    assert f1["f1"] >= 0.95 and f1["macro_f1"] >= 0.9 and accuracy >= 0.95


def test_judgement_normalisation():
    t = Target("intra", mem("t", "individual", "a note"), (mem("r", "team", "a rule"),), T0)
    from memgraft.collab.maintain.judgement import normalise

    assert normalise(t, "compatible", "revise", "x") == Judgement(Relation.compatible, Action.keep, "a note")
    assert normalise(t, "contradiction", "keep", "x").maintained == "a note"
    assert normalise(t, "contradiction", "revise", " a note ").maintained == revised_text("a note", "2024-03-01T09:00:00",
                                                                                          t.against[0].memory_id)
    assert normalise(t, "contradiction", "revise", "new text").maintained == "new text"


@pytest.mark.slow
def test_rules_updater_over_a_generated_stream_agrees_with_the_ledger(tmp_path, embedder):
    from memgraft.collab.ingest import ingest_stream, read_stream

    data = generate(seed=0, teams=3, groups=12)
    paths = data.write(tmp_path / "ds")
    memo = MemoEmbedder(embedder)
    bank = MemoryBank(tmp_path / "bank.sqlite", memo)
    stats = ingest_stream(Updater(bank, RulesPolicy(embedder=memo), HiCoMERSettings()), read_stream(paths["stream"]))
    assert [s.error for s in stats] == [None] * 3 and sum(s.applied for s in stats) == 36
    gold = {m["memory_id"]: m for m in data.memories}
    rows = [m for team in bank.teams() for m in bank.memories(team)]
    assert len(rows) == len(gold)
    valid = np.mean([m.valid == (gold[m.memory_id]["outdated_at"] is None) for m in rows])
    text = np.mean([m.maintained == gold[m.memory_id]["maintained"] for m in rows])
    # measured: 1.00 and 1.00 on this stream (0.99-1.00 on 4 teams x 30 groups, seeds 0-3)
    assert valid >= 0.95 and text >= 0.93, (valid, text)
    log = [d for team in bank.teams() for d in bank.decisions(team)]
    assert len({d.decision_id for d in log}) == len(log) == sum(s.decisions for s in stats)
    assert any(d.action is Action.keep for d in log) and any(d.level == "intra" for d in log)
    bank.close()


# -- the real model ------------------------------------------------------------------------------


@pytest.mark.slow
def test_llm_policy_on_smollm2_gives_schema_valid_judgements(settings):
    from memgraft.models.llm.factory import load_llm

    s = settings.model_copy(deep=True)
    s.generation.max_new_tokens = 200
    policy = LLMPolicy(load_llm(s), s.generation)
    gold = generate(seed=0, teams=1, groups=4).gold
    rows = [next(r for r in gold if r["relation"] == rel) for rel in ("contradiction", "compatible", "neutral")]
    targets = [target_from_gold(r) for r in rows]
    judgements = policy.judge(targets)
    assert len(judgements) == 3 and policy.name.startswith("llm:")
    for t, j in zip(targets, judgements):
        assert isinstance(j.relation, Relation) and isinstance(j.action, Action)
        if j.action is Action.keep:
            assert j.maintained == t.memory.maintained
        else:
            assert j.relation is Relation.contradiction and j.maintained and j.maintained != t.memory.maintained
    assert policy.usage.calls >= 3 and policy.usage.completion_tokens > 0
