"""Topic words (memgraft.collab.maintain.topic): where neither memory names a subject, a record on another
lower-case question never retires a current memory, and two wordings of one question still supersede."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from memgraft.collab.api import CollabMemory
from memgraft.collab.maintain import cased, kinds, topic
from memgraft.collab.maintain.judgement import Target
from memgraft.collab.maintain.policies import make_policy
from memgraft.collab.types import Action, Relation
from tests.collab_bank_helpers import mem

# A team's other questions, in several wordings each: their topic words recur in their own memories, the wording's
# words across all of them.
QUESTIONS = ["how many moons does the ringed planet have", "the longest river on the northern continent",
             "who holds the record for the deepest free dive", "how tall is the old lighthouse on the cape",
             "which school won the spelling bee last spring", "the fastest lap ever run on the harbour circuit",
             "how much does a season pass at the ski hill cost", "who sings the theme of the cartoon about foxes",
             "the most watched final of the chess league", "how many stations does the orbital railway have",
             "who painted the mural in the station hall", "the oldest tree in the botanical garden"]
WORDINGS = ["Log: {q}? — {v}", "Q: {q}? A: {v}", "Record: {q} is {v}.", "heard {v} for {q}, per the archive",
            "my notes say {v} on '{q}'"]


def team_words(extra=()):
    words = topic.TeamWords()
    for i, q in enumerate(QUESTIONS):
        for j, w in enumerate(WORDINGS):
            words.add(w.format(q=q, v=f"Answer{i}{j}"))
    for text in extra:
        words.add(text)
    return words


POINTS = "Log: Who has scored the most points in a nba game? — Wilt Chamberlain"
ASSISTS = "Q: Record for most assists in a nba game? A: 29"
NBA = ["Q: who won the nba game on christmas? A: Lakers", "Log: longest nba game ever played? — 6 overtimes"]


def test_another_lower_case_question_is_another_topic_and_the_same_one_is_not():
    words = team_words([POINTS, ASSISTS, *NBA])
    assert topic.other_topic(POINTS, ASSISTS, words, 50)
    assert not topic.other_topic(POINTS, "Record: who has scored the most points in a nba game is 100.", words, 50)
    # the wording's own words differ ("heard", "archive" / "notes", "say"), but every team question has them
    assert not topic.other_topic("heard 7 for how many moons does the ringed planet have, per the archive",
                                 "my notes say 9 on 'how many moons does the ringed planet have'", words, 50)
    assert not topic.other_topic(POINTS, ASSISTS, words, min_memories=words.n + 1)  # too few memories to tell


def test_two_places_named_in_lower_case_are_two_topics_however_common_their_names():
    """'united states' is in many of a team's questions, so it is never the rarest word of one; the LLM's vocabulary
    still spells it, and 'india', as a name (memgraft.collab.maintain.cased). From a SituatedQA team in one bank."""
    us = "Confirmed: The last time the united states had a solar eclipse is August 21, 2017."
    india = "As of 2019, the last time solar eclipse happened in india was December 26, 2019."
    common = [f"Q: who was the {i}th president of the united states? A: Name{i}" for i in range(12)]
    eclipses = ["Log: the last time a solar eclipse was seen in the team's town? — 1999",
                "Q: when is the next solar eclipse? A: 2026"]
    words = team_words([*common, *eclipses])
    assert topic.other_topic(us, india, words, 50)
    # one name on one side only is no second subject; one question asked again still supersedes
    assert not topic.other_topic(us, "Record: the last time the united states had a solar eclipse was 2024.", words, 50)
    assert not topic.other_topic(us, "the last time we had a solar eclipse was June 2, 2024.", words, 50)


def test_the_capitalisation_prior_reads_names_and_not_common_words():
    from memgraft.collab.maintain import cased
    assert all(map(cased.is_name, ["india", "milwaukee", "cleveland", "olympics"]))
    assert not any(map(cased.is_name, ["president", "states", "last", "time", "game", "score"]))


@pytest.fixture(scope="module")
def default(settings, embedder):
    return make_policy(settings, embedder=embedder)  # the product default: the pair judge and its second opinion


@pytest.fixture(scope="module")
def without_topics(default):
    return dataclasses.replace(default, topic_from=0)  # hicomer.judge_topic_from=0, the same models


def judge(policy, target, ref, words):
    [j] = policy.judge([Target("inter", target, (ref,), ref.time, words)])
    return j


def test_a_record_on_another_question_keeps_the_current_memory(default):
    words = team_words([POINTS, *NBA])
    old, new = mem("points", "individual", POINTS), mem("assists", "team", ASSISTS, years=2)
    # the rule reads two questions; the judge alone read the pair as a conflict while its encoder read both
    # orders, and since it reads one (issue 32) it no longer does, so the product's keep is what is asserted
    assert topic.other_question(POINTS, ASSISTS) or topic.asked_otherwise(POINTS, ASSISTS)
    assert judge(default, old, new, words).action is Action.keep


def test_the_same_question_in_another_wording_is_still_superseded(default):
    words = team_words([POINTS, *NBA])
    old = mem("points", "individual", POINTS)
    new = mem("new", "team", "Record from 2030: who has scored the most points in a nba game is Bol Manute.", years=2)
    assert judge(default, old, new, words).action is Action.revise


STARTING = "Starting in {y}, the records give {v} for {q}."


def test_a_dated_record_on_another_question_keeps_the_current_memory_and_on_the_same_one_supersedes(default):
    """"Starting in 2018, ..." dates a record; it says no decision changed, so the team's words still tell two
    questions apart ("the speaker of the house of assembly" / "the next book after the last one")."""
    words = team_words([STARTING.format(y=2000 + i, v=f"Value{i}", q=q) for i, q in enumerate(QUESTIONS)])
    old = mem("speaker", "team", STARTING.format(y=2017, v="Halson Moultrie", q="the speaker of the house of assembly"))
    other = mem("book", "team", STARTING.format(y=2020, v="Anne of the Island", q="the next book after anne of avonlea"),
                years=2)
    assert judge(default, old, other, words).action is Action.keep
    same = mem("again", "team", STARTING.format(y=2021, v="Patricia Deveaux", q="the speaker of the house of assembly"),
               years=3)
    assert judge(default, old, same, words).action is Action.revise


T0 = datetime(2026, 1, 6, 9, tzinfo=timezone.utc)


def test_a_banks_counts_follow_its_writes_and_another_writers(settings, embedder, tmp_path):
    """Counted once from the bank, then only the rows written since, by this bank object or another."""
    path = tmp_path / "bank.sqlite"
    cm = CollabMemory.open(path, settings, embedder=embedder)

    def add(bank, gid, days, *texts):
        bank.add_group({"team": "t", "group_id": gid, "time": (T0 + timedelta(days=days)).isoformat(),
                        "memories": [{"memory_id": f"{gid}-{i}", "type": "individual", "author": "a", "content": c}
                                     for i, c in enumerate(texts)]})

    add(cm, "g1", 0, "heard the ferry leaves at noon", "the ferry leaves from pier two")
    first = topic.team_words(cm.bank, "t")
    assert (first.n, first.df["ferry"], first.df["pier"]) == (2, 2, 1)
    other = CollabMemory.open(path, settings, embedder=embedder)  # another writer of the same bank
    add(other, "g2", 1, "the pier closes in winter")
    add(cm, "g3", 2, "winter timetable for the ferry")
    again = topic.team_words(cm.bank, "t")
    assert again is first and (again.n, again.df["ferry"], again.df["pier"], again.df["winter"]) == (4, 3, 2, 2)
    other.close()
    cm.close()


def test_a_bank_keeps_counts_for_its_recent_teams_only_and_counts_them_again_on_return(settings, embedder, tmp_path,
                                                                                       monkeypatch):
    """One service process serves many teams: counts are kept for the TEAMS_KEPT most recent, and a team that
    returns after being let go is counted again from its bank, to the same figures."""
    monkeypatch.setattr(topic, "TEAMS_KEPT", 2)
    cm = CollabMemory.open(tmp_path / "bank.sqlite", settings, embedder=embedder)
    for team in ("a", "b", "c"):
        cm.add_group({"team": team, "group_id": "g", "time": T0.isoformat(),
                      "memories": [{"memory_id": f"{team}-m", "type": "individual", "author": "x",
                                    "content": f"the ferry for team {team} leaves at noon"}]})
        topic.team_words(cm.bank, team)
    assert list(topic._COUNTS[cm.bank]) == ["b", "c"]
    back = topic.team_words(cm.bank, "a")
    assert (back.n, back.df["ferry"]) == (1, 1) and list(topic._COUNTS[cm.bank]) == ["c", "a"]
    cm.close()


def test_only_the_pair_judge_reads_the_counts(settings, embedder, tmp_path, monkeypatch):
    """The rules and llm updaters never read topic words, so a write under them does not count the team."""
    calls = []
    monkeypatch.setattr(topic, "team_words", lambda bank, team: calls.append(team) or topic.TeamWords())
    rules = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules"})})
    rules_cm = CollabMemory.open(tmp_path / "rules.sqlite", rules, embedder=embedder)
    rules_cm.add_group({"team": "t", "group_id": "g", "time": T0.isoformat(),
                        "memories": [{"memory_id": "m", "type": "individual", "author": "x", "content": "noon"}]})
    assert calls == []
    rules_cm.close()


def test_two_questions_are_two_topics_in_a_team_of_any_size():
    """A question is the subject and attribute of what answers it: read from the pair alone, with no counts,
    so the first memories of a team are kept apart too; a question asked again around other words is one."""
    assert topic.other_question(POINTS, ASSISTS)
    assert topic.other_question("Q: When is the last time the lions made the playoffs? A: 2016",
                                "Q: When was the last time the detroit lions swept the green bay packers? A: 2017")
    # the same question inside a note's own words ("my sheet lists ... as"), numbers in it, a typo in it
    sheet = 'Note: my sheet lists "Who won the grand national 1st 2nd 3rd?" as Tiger Roll, Pleasant Company.'
    assert not topic.other_question(sheet, "Who won the grand national 1st 2nd 3rd? Tiger Roll, Magic of Light.")
    assert not topic.other_question(POINTS, "Log: Who has scord the most points in a nba game? — Bol Manute")
    # asked again in more words: every word of the shorter question is in the other
    assert not topic.other_question("Record from 1960: Who has scored the most points in a nba game? Elgin Baylor.",
                                    "Who scored the most points in one nba basketball game? Wilt Chamberlain.")
    assert not topic.other_question(POINTS, "Record from 2030: the most points in a nba game is Bol Manute.")


def test_a_record_on_another_question_keeps_the_current_memory_before_the_team_is_counted(default):
    """The team's first memories: too few to count words (``judge_topic_from``), the questions still tell."""
    words = topic.TeamWords()  # an empty team: other_topic reads nothing
    old, new = mem("points", "individual", POINTS), mem("assists", "team", ASSISTS, years=2)
    # the rule reads two questions; the judge alone read the pair as a conflict while its encoder read both
    # orders, and since it reads one (issue 32) it no longer does, so the product's keep is what is asserted
    assert topic.other_question(POINTS, ASSISTS) or topic.asked_otherwise(POINTS, ASSISTS)
    assert judge(default, old, new, words).action is Action.keep
    again = mem("new", "team", "Log: Who has scored the most points in a nba game? — Bol Manute", years=2)
    assert judge(default, old, again, words).action is Action.revise


def test_quoted_questions_are_read_as_questions():
    """Prose quotes its question without a "?": the quote is read, a word's apostrophe inside it ("who's") is not
    its end, and a hyphenated word is matched by its parts ("state-miami")."""
    gold = "The answer to 'who won the most gold medals in one olympic games' changed in 2008 to Michael Phelps."
    assert topic.other_question(gold, "The answer to 'who has the most gold medals in gymnastics' changed in 2019.")
    assert topic.question_words("Starting in 2019: X, as of the latest count of youtube channel subscribers.") \
        is None  # no quote, no "?", not asked: not read
    # a tag question ("..., right?") is no question; the quoted one beside it is
    assert topic.question_words("quick one: 'how many students attend school in the united states' — 76.6 million, "
                                "right?") == {"many", "students", "attend", "school", "united", "states"}
    assert topic.question_words("quick one: the head of the church — George VI, right?") is None
    # a statement with a "?" is no question to hold another text to ("To present, ... has been home for ...?")
    assert not topic.other_question("Checked again: To present, usl league one has been home for richmond kickers? "
                                    "third division", "The league of Rchmond Kickers is USL League One.")
    score = "'what's the score of the florida state-miami game'"
    assert not topic.other_question(f"ngl I thought {score} went to 27–10", f"52–10 answers {score} from 2020 onward")


def test_a_change_stated_on_another_question_keeps_the_current_memory(default, without_topics):
    """'changed' in a record on another question changes that question, not this one (SituatedQA dev prose)."""
    words = topic.TeamWords()
    old = mem("games", "team", "The answer to 'who won the most gold medals in one olympic games' changed in 2008 "
                               "to Michael Phelps.")
    new = mem("gym", "team", "The answer to 'who has the most gold medals in gymnastics' changed in 2019 to Simone "
                             "Biles.", years=1)
    assert judge(without_topics, old, new, words).action is Action.revise  # what the judge alone reads
    j = judge(default, old, new, words)
    assert j.action is Action.keep and j.relation is not Relation.contradiction


def test_a_question_asked_inside_a_sentence_is_read():
    """Asked in prose without marks: "ask" and a question word, to the clause's end."""
    assert topic.question_words("Starting in 2019: X, if you ask who's youtube channel has the most subscribers.") \
        == {"who's", "youtube", "channel", "most", "subscribers"}  # as a quote of it is read
    assert topic.question_words("If anyone asks who did the boston celtics draft this year, the answer reads "
                                "Aaron Nesmith.") == {"boston", "celtics", "draft", "year"}
    assert topic.question_words("We asked the vendor for a quote on the new freezer.") is None


WILLIS = "Bruce Willis answers 'who has been paid the most for a movie' from 1999 onward."
REEVES = "Keanu Reeves answers 'who has been paid the most for a movie' from 2003 onward."


def test_one_question_answered_by_two_names_is_one_subject():
    """The names are the answers, not who the memory is about: the question is."""
    assert topic.same_question(WILLIS, REEVES)
    assert topic.same_question("Reggie Miller? that's what I have written down for 'who has scored the most 3 "
                               "pointers in nba history'", "Starting in 2014: Ray Allen, if you ask who has scored "
                               "the most 3 pointers in nba history.")
    assert not topic.same_question(POINTS, ASSISTS)  # two questions
    assert not topic.same_question(WILLIS, "Keanu Reeves starred in The Matrix in 1999.")  # asks nothing of it
    assert not topic.same_question("Q: who won? A: Lakers", "who won? Celtics")  # too few words to say a topic


def test_a_later_answer_to_the_same_question_supersedes_whatever_names_it_carries(default, without_topics):
    """SituatedQA dev prose: the subject reader takes the leading names for two subjects, so the judge's
    contradiction (p 0.99) was set aside and the outdated answer stayed valid."""
    words = topic.TeamWords()
    old, new = mem("willis", "team", WILLIS), mem("reeves", "team", REEVES, years=4)
    j = judge(without_topics, old, new, words)
    assert j.action is Action.keep and "another subject" in j.reason  # what the subject reading alone gives
    assert judge(default, old, new, words).action is Action.revise


def test_a_team_record_that_changes_another_question_keeps_the_current_memory(default, without_topics):
    """A team record saying its answer changed is a decision changed only on its own question: the pjs' episode
    count was retired by a record on peaky blinders' (SituatedQA dev prose)."""
    words = topic.TeamWords()
    old = mem("pjs", "team", "41 answers 'how many episodes of the pjs are there' from May 2001 onward.")
    new = mem("peaky", "team", "The answer to 'how many episodes is there of peaky blinders' changed in September "
                               "2019 to 29.", years=18)
    assert judge(without_topics, old, new, words).action is Action.revise  # what the change rule alone reads
    assert judge(default, old, new, words).action is Action.keep


def test_a_question_is_read_from_the_clause_that_asks_it():
    """"As of 2017, When's ...?" asks from "When's" (the capital that opens the clause named nothing), so a record
    on another question about the same team keeps it (SituatedQA dev dense); a clause before it that names its
    subject stays part of it, and then the question names one and is not read."""
    christmas = "As of 2017, When's the last time the philadelphia eagles played on christmas day? The 2017 NFL season."
    assert topic.question_words(christmas) == {"last", "time", "philadelphia", "eagles", "played", "christmas", "day"}
    assert topic.other_question(christmas, "The last time the philadelphia eagles went to the playoffs was 2018.")
    assert topic.question_words("Regarding the institute founded by Hans Elsässer in 1969, what person managed it? "
                                "Hans-Walter Rix.") is None


@pytest.mark.parametrize("keyed,record", [
    # the record of one county's last win retired the other county's (SituatedQA train part, dense)
    ("From my notes: When did dublin last win hurling all ireland = 1938",
     "When did galway last win the hurling all ireland? 1988."),
    # where the previous cup was held is not when brazil last won it
    ("Where was the previous fifa world cup held: Brazil", "Record from 2002: the last time brazil won the world cup "
                                                          "was 2002."),
])
def test_a_question_asked_as_a_key_is_read(default, keyed, record):
    """"Question: value" and "question = value" ask their question as "Question? value" does; unread, a record on
    another question with the same words retired the current memory at p = 0.99. A key that is no question
    ("Deploys happen on Tuesdays: confirmed") and one that names its subject are not read."""
    assert topic.question_words(keyed)
    assert topic.question_words("Deploys happen on Tuesdays: confirmed") is None
    assert topic.question_words("Who is the CEO of Siemens: Joe Kaeser") is None
    assert topic.other_question(keyed, record)
    old, new = (mem("keyed", "team", keyed), mem("record", "team", record, years=1)) if "dublin" in keyed else \
        (mem("record", "team", record), mem("keyed", "team", keyed, years=1))
    assert judge(default, old, new, topic.TeamWords()).action is Action.keep
    assert topic.same_question("Log: When did galway last win the hurling all ireland = 1988",
                               "When did galway last win the hurling all ireland? 2017.")


def test_the_prior_can_be_read_ahead_in_the_background():
    """A service reads the prior at start-up (``cased.warm``) so that its first write does not pay for it."""
    cased._read.cache_clear()
    assert cased._read.cache_info().currsize == 0
    cased.warm().join(timeout=60)
    assert cased._read.cache_info().currsize == 1 and cased.is_name("india")


def test_the_tagger_can_be_loaded_ahead_in_the_background(monkeypatch):
    """A service loads the word tagger at start-up too (``kinds.warm``): a write then finds it loaded, once."""
    monkeypatch.setattr(kinds, "_NLP", [])
    kinds.warm().join(timeout=120)
    assert len(kinds._NLP) == 1
    loaded = kinds._NLP[0]
    kinds.warm().join(timeout=120)
    assert kinds._NLP == [loaded] and "moons" in kinds.things("how many moons does the ringed planet have")


def test_a_write_during_the_background_read_waits_for_it_and_the_file_is_parsed_once(monkeypatch):
    import gguf

    parsed, real = [], gguf.GGUFReader
    monkeypatch.setattr(gguf, "GGUFReader", lambda *a, **k: (parsed.append(1), real(*a, **k))[1])
    cased._read.cache_clear()
    thread = cased.warm()
    ranks = cased._ranks()  # what a write's topic check asks while the service's start-up read runs
    thread.join(timeout=60)
    assert ranks and ranks is cased._ranks() and len(parsed) == 1


def test_two_asked_questions_are_compared_question_to_question():
    """Where both texts ask, the words around the other's question do not hide a word its question lacks: "and that
    held" closing a note is not "been held" (two questions from one SituatedQA team)."""
    held = "United States answers 'where have the most olympic games been held' from 1904 onward."
    medals = "In 2000 we started answering 'who has the most medals in the olympic games' with Michael Phelps, and that held."
    assert topic.other_question(held, medals) and topic.other_question(medals, held)
    again = "From 1996, 'where have the most olympic games been held' gets United States for an answer."
    assert not topic.other_question(held, again)


def test_a_shared_word_is_a_topic_word_or_a_name_on_both_sides():
    """A sentence's opening capital is not a name: "Starting in 2011, ..." shares nothing with "the starting
    quarterback"; a subject written as a name on one side and in lower case on the other is shared."""
    population = "Starting in 2011, the records give 12,781 for the population of the magdalen islands."
    vikings = "Starting in 2019, the records give Kirk Cousins for the starting quarterback for the vikings."
    records = [f"Starting in 20{i:02d}, the records give Answer{i} for the {q}." for i, q in enumerate(QUESTIONS)]
    # the vikings' starting quarterback asked a few times: "starting" is as rare as that topic's own words
    asked = [f"Log: the starting quarterback for the vikings? — Name{i}" for i in range(3)]
    words = team_words([population, vikings, *records, *asked])
    assert words.df["starting"] == words.df["vikings"] < words.df["records"]
    assert topic.other_topic(population, vikings, words, 50)
    league = "In 2006 the league of Richmond Kickers went to third division."
    usl = ("In 2019 we started answering 'to present, usl league one has been home for richmond kickers' with "
           "USL League One, and that held.")
    words = team_words([league, usl, "Q: which league did the harbour club join? A: Second League"])
    assert not topic.other_topic(league, usl, words, 50)


NOTES = ["my money's on {v} re {q}", "pretty sure it's {v} for {q}", "fwiw my spreadsheet says {v} for '{q}'"]
RAIDERS = "From 2016, 'when was the last time the raiders made the playoffs' gets 2016 for an answer."


def note_words():
    """A team whose informal notes and records repeat their wordings over its questions."""
    return team_words([n.format(v=f"Value{i}", q=q) for i, q in enumerate(QUESTIONS) for n in NOTES]
                      + [f"From 2016, '{q}' gets Value{i} for an answer." for i, q in enumerate(QUESTIONS)])


def test_a_note_on_its_groups_record_topic_is_one_topic_and_a_shared_subject_alone_is_not():
    words = note_words()
    assert topic.same_topic("my money's on 2002 re the last time the raiders made the playoffs", RAIDERS, words, 50)
    # one rare word shared is a subject, not its attribute
    assert not topic.same_topic("I'd go with Lacazette for arsenal's top scorer in the premier league season tbh",
                                "From 2020, 'how many times have arsenal won the community shield' gets 16 for an "
                                "answer.", words, 50)
    # two questions asked are two topics, whatever the counts
    assert not topic.same_topic("Simmons? that's what I have written down for 'who led the nba in steals last year'",
                                "From 2019, 'who led the nba in blocks last year' gets Turner for an answer.", words, 50)
    assert not topic.same_topic("my money's on 2002 re the last time the raiders made the playoffs", RAIDERS, words,
                                words.n + 1)  # too few memories to tell


def test_a_note_in_its_groups_record_words_with_another_value_is_overruled(default):
    """The intra step in people's words: a member's stale note, written in the group whose team record gives the
    question a new answer, is overruled, though the judge alone reads the pair as neutral; one restating it is not."""
    words = note_words()
    record = mem("record", "team", RAIDERS, years=1)
    stale = mem("note", "individual", "my money's on 2002 re the last time the raiders made the playoffs", years=1)
    [j] = default.judge([Target("intra", stale, (record,), record.time, words)])
    assert j.action is Action.revise and j.relation is Relation.contradiction
    [j] = dataclasses.replace(default, topic_from=0).judge([Target("intra", stale, (record,), record.time, words)])
    assert j.action is Action.keep  # what the judge alone reads
    same = mem("same", "individual", "pretty sure it's 2016 for the last time the raiders made the playoffs", years=1)
    [j] = default.judge([Target("intra", same, (record,), record.time, words)])
    assert j.action is Action.keep


NARROW = "If anyone asks when the valley last had a partial eclipse, the answer from 2014 on reads October 23, 2014."
WIDE = "The answer to 'when did the valley last have an eclipse' changed in 2017 to August 21, 2017."
HARBOUR = "The last time the harbour club won a cup tie passed to 1966 in 1966."
RIVER = "The answer to 'when was the last time the river club won a cup tie' changed in 2019 to 2019."


def test_a_word_added_to_a_question_makes_another_question():
    """One question narrowed by a word ("partial") is another question either way; where only one text asks, a word
    of its question the other lacks ("river" against "harbour") says so too; the same question in another wording
    is the same (SituatedQA's training part, prose: 29 of 55 wrong retirements were such pairs)."""
    assert topic.asked_otherwise(NARROW, WIDE) and topic.asked_otherwise(WIDE, NARROW)
    assert topic.asked_otherwise(HARBOUR, RIVER) and topic.asked_otherwise(RIVER, HARBOUR)
    same = "The answer to 'when was the last time the harbour club won a cup tie' changed in 2019 to 2019."
    assert not topic.asked_otherwise(HARBOUR, same)
    assert not topic.asked_otherwise(NARROW, NARROW.replace("2014 on reads October 23, 2014", "2016 on reads May 9"))
    # a verb the other text puts otherwise is no other question (TimeQA val: "where was steven ozment going to school")
    asks, states = "Where was anna lindqvist going to school? Uppsala University.", \
        "Note: the school of Anna Lindqvist is Uppsala University, as far as I know."
    assert "going" not in kinds.things(asks) and "school" in kinds.things(asks) and topic.asked_otherwise(
        asks, "Note: the employer of Anna Lindqvist is Uppsala University.")
    assert not topic.asked_otherwise(asks, states) and not topic.asked_otherwise(states, asks)


@pytest.mark.parametrize("old_text, new_text", [(NARROW, WIDE), (WIDE, NARROW), (HARBOUR, RIVER)])
def test_a_record_on_a_narrower_or_wider_question_keeps_the_current_memory(default, old_text, new_text):
    words = topic.TeamWords()  # an uncounted team: the pair alone decides
    old, new = mem("old", "team", old_text), mem("new", "team", new_text, years=3)
    assert judge(default, old, new, words).action is Action.keep
    same = mem("same", "team", old_text.replace("2014", "2020").replace("1966", "2020").replace("2017", "2020"),
               years=6)
    assert judge(default, old, same, words).action is Action.revise


def test_a_lower_case_word_inside_a_name_is_not_a_topic_word():
    """"Vijay kumar Choudhary": "kumar" names the minister, it is not what the record is about; read as a topic word
    (rare in the team, as a name's part is) it made the record's topic look unlike its own group's stale note."""
    words = topic.topic_words("Vijay kumar Choudhary took over the education minister of bihar in 2020.")
    assert "kumar" not in words and {"education", "minister", "bihar"} <= words
    assert "and" not in topic.topic_words("Paris and London")  # a small word between two names stays out too
    assert "meets" in topic.topic_words("the Tuesday group meets Thursday")  # one-word verb between names: kept


def test_a_word_a_note_capitalises_elsewhere_is_its_names_not_its_topics(default):
    """"Marina Bay sands and Marina Bay Sands": "sands" is a name's word, rarer in the team than any topic word, and
    counted as the note's own topic word it made a stale note look off its own group's record's topic; the note
    stayed valid and ranked first for "the most expensive skyscraper in the world" (SituatedQA dev, prose)."""
    note = "the most expensive skyscraper in the world hasn't moved off Marina Bay sands and Marina Bay Sands afaik"
    record = "The 2012 entry puts Abraj Al Bait in place for the most expensive skyscraper in the world."
    words = note_words()
    for i, q in enumerate(QUESTIONS):  # the team writes both wordings over its other questions too
        words.add(f"{q} hasn't moved off Value{i} afaik")
        words.add(f"The 2012 entry puts Value{i} in place for {q}.")
    for text in (note, record, "Q: the tallest skyscraper in the world? A: Burj Khalifa",
                 "Log: the most expensive painting in the world? — Salvator Mundi"):
        words.add(text)
    assert topic.same_topic(note, record, words, 50)
    rec, stale = mem("record", "team", record, years=1), mem("note", "individual", note, years=1)
    [j] = default.judge([Target("intra", stale, (rec,), rec.time, words)])
    assert j.action is Action.revise and j.relation is Relation.contradiction
