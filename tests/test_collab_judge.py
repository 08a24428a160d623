"""The default updater judge (the bundled pair classifier) on the cases real data showed, and the default search."""

from __future__ import annotations

import pytest

from memgraft.collab.api import CollabMemory
from memgraft.collab.answer.conflicts import ConflictJudge
from memgraft.collab.maintain.judge import JudgePolicy, load_judge
from memgraft.collab.maintain.pair_encoder import load_pair_encoder
from memgraft.collab.maintain.judgement import Target
from memgraft.collab.maintain.policies import make_policy
from memgraft.collab.types import Action, Memory, Relation
from tests.collab_bank_helpers import mem

@pytest.fixture(scope="module", params=["judge alone", "with its second opinion"])
def policy(request, embedder):
    """Every case holds for the judge alone and with the pair encoder's second opinion (the default)."""
    second = load_pair_encoder("bundled") if request.param != "judge alone" else None
    return JudgePolicy(load_judge("bundled"), embedder=embedder, second=second)


def judge_one(policy, target: Memory, *refs: Memory) -> tuple[Relation, Action]:
    [j] = policy.judge([Target("inter", target, tuple(refs), max(r.time for r in refs))])
    return j.relation, j.action


@pytest.mark.parametrize("old,new", [
    ("Record from 1860: the owner of Arnolfini Portrait is National Gallery.",
     "Record from 1872: the owner of The Fifer is Durand-Ruell."),
    ("The sports team of Ty Detmer is Detroit Lions.", "The sports team of Olivier Bernard is Rangers."),
    ("who is the president of france: Emmanuel Macron", "who is the president of india: Ram Nath Kovind"),
])
def test_another_subject_with_the_same_attribute_is_no_contradiction(policy, old, new):
    relation, action = judge_one(policy, mem("old", "team", old), mem("new", "team", new, years=2))
    assert relation is not Relation.contradiction and action is Action.keep


@pytest.mark.parametrize("old,new", [
    ("Record from 1860: the owner of The Fifer is Hôtel Drouot.",
     "Record from 1872: the owner of The Fifer is Durand-Ruell."),
    ("The sports team of Ty Detmer is Green Bay Packers.", "The sports team of Ty Detmer is Detroit Lions."),
    ("who is the president of india: Pranab Mukherjee", "who is the president of india: Ram Nath Kovind"),
])
def test_the_same_subject_with_a_new_value_is_revised(policy, old, new):
    assert judge_one(policy, mem("old", "team", old), mem("new", "team", new, years=2)) == (
        Relation.contradiction, Action.revise)


def test_a_stale_note_is_revised_and_a_note_never_outdates_a_record(policy):
    record = mem("r", "team", "Record from 1872: the owner of The Fifer is Durand-Ruell.", years=2)
    stale = mem("n", "individual", "Note: my sheet still lists Hôtel Drouot as the owner of The Fifer.", years=2)
    [j] = policy.judge([Target("intra", stale, (record,), record.time)])
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise)
    assert "superseded by r" in j.maintained and "Durand-Ruell" not in j.maintained
    relation, action = judge_one(policy, record, stale)  # the other way: no authority to settle it
    assert action is Action.keep


def test_a_note_its_own_group_states_again_is_kept_whatever_else_the_group_holds(settings, embedder):
    """TimeQA val: Cospaia's note, restated by Cospaia's record of the same group, read as conflicting with
    Florence's record beside it ("Grand Dukes" against "Grand Duchy"); one group's team memories hold
    together, so that conflict is with another subject. Without the rule the note is revised."""
    from dataclasses import replace

    from memgraft.collab.types import Relation as R

    cospaia = ("The small state within modern-day Italy, located in northern Umbria, Republic of Cospaia, shared its "
               "border with what state?")
    note = mem("note", "individual", f'Note: my sheet lists "{cospaia}" as Grand Duchy of Tuscany.')
    record = mem("cospaia", "team", f"Record from 1569: {cospaia} Grand Duchy of Tuscany.")
    florence = mem("florence", "team", "The Central-Northern Italian city Florence was the most important city of "
                                       "what? Grand Dukes of Tuscany.")
    default = make_policy(settings, embedder=embedder)
    [p_florence, p_record] = default.judge_pairs([note, note], [florence, record])
    assert p_florence[2] >= default.threshold and p_record[1] > max(p_record[0], p_record[2])
    target = Target("intra", note, (record, florence), record.time)
    [j] = default.judge([target])
    assert (j.relation, j.action) == (R.compatible, Action.keep) and "agrees with cospaia" in j.reason
    [off] = replace(default, coexisting=False, subject_first=False).judge([target])
    assert (off.relation, off.action) == (R.contradiction, Action.revise)
    [subject_alone] = replace(default, coexisting=False).judge([target])  # Florence names neither Cospaia nor its value
    assert subject_alone.action is Action.keep
    # a record of another group (a later one, as at the inter step) still overrules the note
    later = replace(florence, memory_id="later", group_id="g9",
                    original=f"Record from 1600: {cospaia} Papal States.", maintained=f"Record from 1600: {cospaia} "
                                                                                   "Papal States.")
    [j] = default.judge([Target("inter", note, (later,), record.time)])
    assert (j.relation, j.action) == (R.contradiction, Action.revise)


def test_a_record_supersedes_one_subjects_memories_the_one_it_contradicts_most_surely(settings, embedder):
    """TimeQA val: Siemens's new CEO was read as conflicting with the Swedish Air Staff's chief (about 0.5)
    as well as with Siemens's last CEO and a stale note (about 1.0). The two sets are about different
    subjects (the judge reads them as neutral to each other), so only Siemens's are superseded; a subject's
    record and its note together are one set and both go."""
    from dataclasses import replace

    ceo = "Who served as the chief executive officer of Siemens?"
    new = mem("new", "team", f"{ceo} Klaus Kleinfeld.", years=12)
    old = mem("old", "team", "As of 1992, Name the chief executive officer of Siemens? Heinrich von Pierer.", years=2)
    note = mem("note", "individual", f'Note: my sheet still lists "{ceo}" as Heinrich von Pierer.', years=12)
    air = mem("air", "team", "The staff of the Chief of the Swedish Air Force known as the Air Staff was commanded by "
                             "which Chief? Dick Stenberg.", years=1)
    default = make_policy(settings, embedder=embedder)
    assert default.one_subject
    targets = [Target("inter", m, (new,), new.time) for m in (old, note, air)]
    off = replace(default, one_subject=False).judge(targets)
    # the subject reading alone keeps the Air Staff's chief: it names neither Siemens nor its CEOs
    assert [j.action for j in off] == [Action.revise, Action.revise, Action.keep]
    assert "another subject" in off[2].reason
    on = default.judge(targets)
    assert [j.action for j in on] == [Action.revise, Action.revise, Action.keep]
    assert on[2].relation is not Relation.contradiction
    # one subject's memories only: nothing is dropped
    assert [j.action for j in default.judge(targets[:2])] == [Action.revise, Action.revise]


def test_make_policy_defaults_to_the_judge_and_refuses_other_vectors(settings, embedder):
    assert settings.hicomer.updater_policy == "judge"
    assert isinstance(make_policy(settings, embedder=embedder), JudgePolicy)

    class Other:
        name, dim = "other-model", 8

    with pytest.raises(ValueError, match="trained on"):
        make_policy(settings, embedder=Other())


def test_conflict_judge_names_the_contradicting_pair(policy):
    old = mem("old", "team", "Record from 1860: the owner of The Fifer is Hôtel Drouot.")
    new = mem("new", "team", "Record from 1872: the owner of The Fifer is Durand-Ruell.", years=2)
    other = mem("other", "team", "Record from 1872: the owner of Arnolfini Portrait is National Gallery.", years=2)
    pairs = ConflictJudge(policy).pairs([new, other, old], new.time)
    assert pairs == {frozenset({"old", "new"})}


STREAM = [
    {"team": "museum", "group_id": "g1860", "time": "1860-01-01T00:00:00", "memories": [
        {"memory_id": "fifer-1", "type": "team", "author": "wiki", "content": "Record from 1860: the owner of The Fifer is Hôtel Drouot."},
        {"memory_id": "arnolfini-1", "type": "team", "author": "wiki", "content": "Record from 1860: the owner of Arnolfini Portrait is National Gallery."}]},
    {"team": "museum", "group_id": "g1872", "time": "1872-01-01T00:00:00", "memories": [
        {"memory_id": "fifer-2", "type": "team", "author": "wiki", "content": "Record from 1872: the owner of The Fifer is Durand-Ruell."},
        {"memory_id": "fifer-note", "type": "individual", "author": "ana", "content": "Note: my sheet still lists Hôtel Drouot as the owner of The Fifer."}]},
    {"team": "museum", "group_id": "g1894", "time": "1894-01-01T00:00:00", "memories": [
        {"memory_id": "fifer-3", "type": "team", "author": "wiki", "content": "Record from 1894: the owner of The Fifer is Musée d'Orsay."}]},
]


def test_default_memory_keeps_other_subjects_and_ranks_the_current_record_first(tmp_path, settings, embedder):
    memory = CollabMemory.open(tmp_path / "bank.sqlite", settings, embedder=embedder)  # no flags: the product
    try:
        for g in STREAM:
            memory.add_group(g)
        now = {m.memory_id: m for m in memory.memories("museum")}
        assert now["arnolfini-1"].valid  # another painting's owner is not outdated by The Fifer's
        assert [m for m, s in now.items() if not s.valid] == ["fifer-1", "fifer-2", "fifer-note"]
        assert "superseded by fifer-3" in now["fifer-2"].maintained and "Orsay" not in now["fifer-2"].maintained
        hits = memory.search("museum", "Who is the current owner of The Fifer?", k=4)
        assert hits[0].memory.memory_id == "fifer-3"
        ranks = {h.memory.memory_id: i for i, h in enumerate(hits)}
        assert ranks["fifer-3"] < ranks["arnolfini-1"] < min(ranks.get("fifer-1", 9), ranks.get("fifer-2", 9))
        then = memory.search("museum", "Who owned The Fifer?", k=4, as_of="1880-06-01T00:00:00")
        assert then[0].memory.memory_id == "fifer-2"  # the record that held then
        assert "fifer-3" not in {h.memory.memory_id for h in then}  # later ones do not appear
    finally:
        memory.close()


def test_the_second_opinion_reads_the_pairs_in_doubt_and_costs_no_accuracy_on_held_out_situatedqa_pairs(
        settings, embedder):
    """SituatedQA's dev file (held out from training; its first 250 questions, 717 pairs), under the default
    policy, whose pair encoder reads both texts of the pairs in doubt (P(contradiction) >= second_from).

    Not asserted: that the blend beats the judge alone. It changes 6 or 7 of the 199 pairs in doubt, about
    as many to right as to wrong: contradiction F1 0.967 -> 0.970 (one pair) with fp32 vectors on one CPU,
    0.953 -> 0.964 where first measured, equal with bf16 vectors; a margin that dtype and CPU move. What
    holds under both dtypes, and what a broken blend fails: the second opinion is averaged into exactly the pairs in
    doubt; the blend makes at most one error more than the judge alone (both dtypes: one fewer or as many);
    and on the pairs in doubt it is right more often than the encoder alone (about 9 errors against 16), so
    a blend that let the encoder decide, or read its classes in another order, fails. The vectors are the
    profile's (embedder_dtype auto: bf16 or fp32 by CPU); both were run."""
    import numpy as np

    from memgraft.collab.data import situatedqa
    from memgraft.collab.train.judge_data import SHARED_DATA, dataset_pairs
    from memgraft.collab.train.judge_train import featurise, pair_scores

    rows = situatedqa.load_rows(SHARED_DATA / "situatedqa-train" / "temp.dev.jsonl", 250)
    pairs = dataset_pairs(situatedqa.convert(rows)[0], "situatedqa-dev")
    features = featurise(pairs, embedder)
    default = make_policy(settings, embedder=embedder)
    assert isinstance(default, JudgePolicy) and default.second is not None
    texts_a, texts_b = [p.a for p in pairs], [p.b for p in pairs]
    own = default.model.probabilities(features.x)
    blended = default.blend(texts_a, texts_b, own)
    doubt = np.flatnonzero(own[:, 2] >= default.second_from)
    assert 0 < len(doubt) < len(pairs)
    assert np.array_equal(np.flatnonzero((blended != own).any(axis=1)), doubt)

    def errors(scores) -> int:
        return round((1.0 - scores["accuracy"]) * scores["pairs"])

    alone = pair_scores(default.model, features)
    both = pair_scores(default.model, features, probabilities=blended)
    assert errors(both) <= errors(alone) + 1, (alone, both)
    second = default.second.probabilities([texts_a[i] for i in doubt], [texts_b[i] for i in doubt])
    y = features.y.numpy()[doubt]

    def wrong(p) -> int:  # pair_scores' rule: contradiction from the threshold, else the likelier of the others
        return int((np.where(p[:, 2] >= default.threshold, 2, np.where(p[:, 1] > p[:, 0], 1, 0)) != y).sum())

    assert wrong(blended[doubt]) < wrong(second), (wrong(blended[doubt]), wrong(second))
