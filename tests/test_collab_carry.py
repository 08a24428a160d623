"""Values read off a memory's words (memgraft.collab.maintain.values), and what the updater does with them: carrying an
overruled value back (memgraft.collab.maintain.carry: a note the team overrules links two wordings of one subject), and a
value list that lost an item read as a changed value."""

from __future__ import annotations

import pytest

from memgraft.collab.api import CollabMemory
from memgraft.collab.maintain.values import list_change, stated_value, states


@pytest.mark.parametrize("note,by,value", [
    ("Checked again: Regarding the institute founded by Hans Elsässer, what person managed it? Steven Beckwith.",
     "Q: Regarding the institute founded by Hans Elsässer, what person managed it? A: Hans-Walter Rix",
     ("steven", "beckwith")),
    # the value starts after "=", not inside the subject's wording; a shared tail stays part of it
    ("From my notes: Which murderess was held in Valley Prison = Clinton Facility and Valley State Prison",
     "Q: Which murderess was held in Valley Prison? A: Oregon Center and Valley State Prison",
     ("clinton", "facility", "and", "valley", "state", "prison")),
    # a trailing hedge is how sure the writer is, not the value
    ("Note: the publisher of the comic is Gemstone Publishing, as far as I know.",
     "Record from 2009: the publisher of the comic is Boom! Studios.", ("gemstone", "publishing")),
    # how current the writer thinks it is ("still", "now") stands before the value, not in it
    ("Log: The bank within the Expobank Group had whom as its top stakeholder? — still Landesbank Baden-Württemberg",
     "Q: The bank within the Expobank Group had whom as its top stakeholder? A: Igor Kim",
     ("landesbank", "baden", "-", "württemberg")),
    ("Observation: the namesake of Breitscheidplatz is still Johannes Gutenberg.",
     "The namesake of Breitscheidplatz is Rudolf Breitscheid.", ("johannes", "gutenberg")),
    # too weak to tell subjects apart: a bare number, one common word
    ("As of 2018, how many episodes are there? 20.", "As of 2018, how many episodes are there? 30.", ()),
    ("Log: is the bridge open? — yes", "Team: is the bridge open? no", ()),
    # the writer speaking ("last I looked") is no value, though it is the only stretch the two word differently
    ("last I looked, 'who holds the record for the most homeruns in a single season' → Mark McGwire",
     "Starting in 2001: Barry Bonds, if you ask who holds the record for the most homeruns in a single season.", ()),
    # a name's numeral is part of it
    ("Checked again: the war the us last declared was World War I",
     "Record from 1941: the war the us last declared was World War II", ("world", "war", "i")),
])
def test_the_value_a_note_states_where_its_overruling_memory_states_another(note, by, value):
    assert stated_value(note, by) == value


def test_a_value_is_stated_only_as_a_whole_value():
    value = ("san", "quentin", "state", "prison")
    assert states("Where was Sirhan held? San Quentin State Prison.", value)
    assert states("Note: my sheet lists the prison as San Quentin State Prison, as far as I know.", value)
    assert not states("Q: Where was he held? A: Adjustment Center at San Quentin State Prison", value)
    assert not states("San Quentin State Prison Museum opened in 1992.", value)
    assert states("Log: where was Sirhan held? — still San Quentin State Prison", value)  # "still" opens a value
    assert not states("Log: the band Still San Quentin State Prison", value)  # a name's "Still" does not


@pytest.mark.parametrize("a,b,changed", [
    ("Where was Josep Rull detained? Lledoners Prison in Catalonia and the Madrilenian prison of Soto del Real.",
     "Record from 2019: the place of detention of Josep Rull is the Madrilenian prison of Soto del Real.", True),
    ("Note: the owners are Tom and Jerry, as far as I know.", "Q: Who owns it? A: Jerry", True),
    ("X is Soto del Real.", "Q: Where is X? A: Soto del Real", False),  # the same whole value
    ("A: Alice and Bob", "A: Carol and Bob", False),  # another list, not a shorter one: the judge's to read
    ("The years were 1990 and 2001.", "Q: Which year? A: 2001", False),  # numbers alone are too common to read
])
def test_a_value_list_that_lost_or_gained_an_item(a, b, changed):
    assert list_change(a, b) is changed and list_change(b, a) is changed


def test_the_judge_reads_a_list_that_lost_an_item_as_a_new_value(settings, embedder):
    from memgraft.collab.maintain.judgement import Target
    from memgraft.collab.maintain.policies import make_policy
    from memgraft.collab.types import Action, Relation
    from tests.collab_bank_helpers import mem

    old = mem("both", "team", "Where was Josep Rull detained? Lledoners Prison in Catalonia and the Madrilenian "
                              "prison of Soto del Real.")
    new = mem("one", "team", "Record from 2019: the place of detention of Josep Rull is the Madrilenian prison of "
                             "Soto del Real.", years=2)
    policy = make_policy(settings, embedder=embedder)
    [p] = policy.judge_pairs([old], [new])
    assert p[2] < policy.threshold and p[1] > p[0]  # alone, the judge reads the shorter list as agreeing
    [j] = policy.judge([Target("inter", old, (new,), new.time)])
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise) and "superseded by one" in j.maintained


def group(gid: str, year: int, *memories: tuple[str, str, str]) -> dict:
    return {"team": "astro", "group_id": gid, "time": f"{year}-01-01T00:00:00",
            "memories": [{"memory_id": m, "type": t, "author": "wiki" if t == "team" else "agent-2", "content": c}
                         for m, t, c in memories]}


# The institute is named three ways, as TimeQA's paraphrases name it; only the note of 2001 links the two wordings.
STREAM = [
    group("g1991", 1991,
          ("heidelberg", "team", "Record from 1991: The man in charge of the research institute located in Heidelberg, "
                                 "Germany was Steven Beckwith."),
          ("other", "team", "Record from 1991: The man in charge of the observatory on Mauna Kea was Robert McLaren.")),
    group("g2001", 2001,
          ("rix", "team", "Q: Regarding the institute founded by Hans Elsässer in 1969, what person managed it? "
                          "A: Hans-Walter Rix"),
          ("note", "individual", "Checked again: Regarding the institute founded by Hans Elsässer in 1969, what person "
                                 "managed it? Steven Beckwith.")),
]


@pytest.mark.parametrize("carry", [True, False, None], ids=["carry, subject first off", "carry off", "default"])
def test_an_earlier_wording_of_an_overruled_value_is_superseded_by_the_same_record(tmp_path, settings, embedder, carry):
    """The 1991 record names Heidelberg and Germany, the overruling record Hans Elsässer: the subject reader reads two
    subjects, and a value carried onto a memory that names another subject is what retired current memories on
    dense teams ("San Francisco" from a note on Holtzman onto a brewery's record). But the 1991 record names its
    subject only by describing it ("the research institute located in Heidelberg"), so with subject first (the
    default) the value is carried still (:mod:`memgraft.collab.maintain.described`)."""
    h = settings.hicomer
    update = {None: {}, True: {"judge_subject_first": False}, False: {"carry_overruled": False}}[carry]
    carry = carry is not False
    s = settings.model_copy(update={"hicomer": h.model_copy(update=update)})
    memory = CollabMemory.open(tmp_path / "bank.sqlite", s, embedder=embedder)
    try:
        for g in STREAM:
            memory.add_group(g)
        now = {m.memory_id: m for m in memory.memories("astro")}
        assert not now["note"].valid and now["rix"].valid and now["other"].valid
        if not carry:  # the judge alone cannot tell the Heidelberg institute is the one Hans Elsässer founded
            assert now["heidelberg"].valid
            return
        assert not now["heidelberg"].valid
        assert "superseded by rix" in now["heidelberg"].maintained and "Rix" not in now["heidelberg"].maintained
        [why] = [d for d in memory.bank.decisions("astro") if d.memory_id == "heidelberg" and not d.valid_after]
        assert "note" in why.reason and "steven beckwith" in why.reason
        hits = memory.search("astro", "Who manages the institute founded by Hans Elsässer?", k=3)
        assert hits[0].memory.memory_id == "rix"
    finally:
        memory.close()


@pytest.mark.parametrize("text, described", [
    ("Record from 1991: The man in charge of the research institute located in Heidelberg, Germany was Steven "
     "Beckwith.", True),
    ("Q: What did they call the college with principals that included Frank Coburn and Clarence Weed? A: Lowell "
     "Normal School", True),
    ("Regarding the institute founded by Hans Elsässer in 1969, what person managed it? Hans-Walter Rix.", True),
    ("the headquarters location of Rainier Brewing Company is San Francisco", False),  # its own name: the owner
    ("Record from 1990: the owner of Rock Crystal (Fabergé egg) is Malcolm Forbes.", False),
    ("the head coach at Calcio Catania is Rolando Maran", False),
    ("The position held by Georges Pompidou is Prime Minister of France.", False),  # the attribute, not a thing
    ("the owner of the Czech nationwide bank founded in 1991 is BAWAG", False),  # no name: nothing to tell
])
def test_a_subject_named_only_by_a_description(text, described):
    from memgraft.collab.maintain.described import described as reads_described

    assert reads_described(text) is described


def test_a_value_is_not_carried_onto_another_question(tmp_path, settings, embedder):
    """"Brazil", overruled as where the previous world cup was held, is still who has won the most world cups: the
    carry step read the value alone and retired that record (SituatedQA train part, dense). Each question has words
    the other lacks, so the value is not carried; the note itself is still overruled."""
    stream = [
        {"team": "cup", "group_id": "g2002", "time": "2002-07-01T00:00:00", "memories": [
            {"memory_id": "most", "type": "team", "author": "wiki",
             "content": "Record from 2002: Who has won the most world cups in football? Brazil."}]},
        {"team": "cup", "group_id": "g2018", "time": "2018-07-01T00:00:00", "memories": [
            {"memory_id": "note", "type": "individual", "author": "agent-2",
             "content": "Log: Where was the previous fifa world cup held? — Brazil"},
            {"memory_id": "held", "type": "team", "author": "wiki",
             "content": "Q: Where was the previous fifa world cup held? A: Russia"}]},
    ]
    now = applied(tmp_path, settings, embedder, stream)
    assert not now["note"].valid and now["held"].valid
    assert now["most"].valid, now["most"].maintained
    # two lower-case questions asked apart carry nothing between them, though they share no topic word: "Michael
    # Phelps", overruled as who carried the flag, still holds the most medals (SituatedQA train part, prose). The
    # cost: a question asked again in words it shares none of is not linked through the note either.
    from memgraft.collab.maintain import topic

    medals = "Starting in 2016: Michael Phelps, if you ask who holds the record for the most olympic medals."
    flag = "From 2018, 'who carried the us flag at opening ceremony' gets Erin Hamlin for an answer."
    assert not topic.other_question_on_topic(medals, flag) and topic.asked_apart(medals, flag)
    assert topic.asked_apart("Q: Who was the coach of sv damstadt 98 after the sacking of norbert maier? A: Torsten "
                             "Frings", "Q: Who filled the vacant manager position? A: Dirk Schuster")
    # a question that names its subject is read by the subject reader, not here (TimeQA's questions mostly do)
    assert not topic.asked_apart("Q: Who was the head coach of Calcio Catania? A: Diego Simeone", flag)


def test_a_value_is_not_carried_across_two_questions_that_share_no_word(tmp_path, settings, embedder):
    """"Michael Phelps", overruled in 2018 as who carried the us flag, still holds the most olympic medals: the two
    questions share no topic word, so the topic check alone let the value through (SituatedQA train part, prose)."""
    stream = [
        {"team": "games", "group_id": "g2016", "time": "2016-08-01T00:00:00", "memories": [
            {"memory_id": "medals", "type": "team", "author": "wiki",
             "content": "Starting in 2016: Michael Phelps, if you ask who holds the record for the most olympic medals."}]},
        {"team": "games", "group_id": "g2018", "time": "2018-02-01T00:00:00", "memories": [
            {"memory_id": "note", "type": "individual", "author": "agent-2",
             "content": "Michael Phelps? that's what I have written down for 'who carried the us flag at opening "
                        "ceremony'"},
            {"memory_id": "flag", "type": "team", "author": "wiki",
             "content": "From 2018, 'who carried the us flag at opening ceremony' gets Erin Hamlin for an answer."}]},
    ]
    now = applied(tmp_path, settings, embedder, stream)
    assert not now["note"].valid and now["flag"].valid
    assert now["medals"].valid, now["medals"].maintained


def applied(tmp_path, settings, embedder, stream):
    """Each memory of the stream's one team, by id, after the stream's groups went through the product updater."""
    memory = CollabMemory.open(tmp_path / "bank.sqlite", settings, embedder=embedder)
    try:
        for g in stream:
            memory.add_group(g)
        return {m.memory_id: m for m in memory.memories(stream[0]["team"])}
    finally:
        memory.close()
