"""What a memory is asked (memgraft.collab.maintain.asked, topic.same_phrase): a question in the asker's own words,
quoted, after "if anyone asks" or stated word for word in two memories, is what they are about, and no part of their
values. Cases from a SituatedQA team in one bank (the judge's training part), where questions often open with no
question word."""

from __future__ import annotations

import pytest

from memgraft.collab.maintain import asked, marks, subject, topic
from memgraft.collab.maintain.judgement import Target
from memgraft.collab.maintain.policies import make_policy
from memgraft.collab.types import Action, Relation
from tests.collab_bank_helpers import mem


@pytest.fixture(scope="module")
def default(settings, embedder):
    return make_policy(settings, embedder=embedder)


def judge(policy, target, ref):
    [j] = policy.judge([Target("inter", target, (ref,), ref.time)])
    return j


def test_a_question_asked_without_a_question_word_is_read_and_cut_from_the_value():
    record = "Starting in 1997: 576, if you ask highest partnership in t20 cricket for any wicket."
    assert asked.asked_questions(record) == ["highest partnership in t20 cricket for any wicket"]
    assert subject.read(record).value == ("576",)
    assert topic.question_words("If anyone asks the most liked youtube video in the world, the answer from 2017 on "
                                "reads Despacito.") == {"most", "liked", "youtube", "video", "world"}
    # quoted in lower case, three words or more: what is asked; a quoted title is capitalised
    assert asked.quoted_questions("can confirm 3,041 on 'most points michael jordan scored in a season'")
    assert not asked.quoted_questions('yep, "Find Me" for the latest episode, saw it myself')
    # a person asked, or a topic asked about, is no question
    for text in ("If you ask me, deploys are fine on Fridays.", "If anyone asks about the outage, point them to the "
                 "status page.", "If anyone asks Bob about it, say no."):
        assert asked.asked_questions(text) == [], text


def test_one_question_in_two_wordings_with_two_numbers_supersedes(default):
    """"130" put first was read as the record's subject, and "131" as another subject's: the older count stayed
    valid beside the newer, and as-of questions between the two got the older."""
    old = mem("old", "team", "Starting in March 2018: 130, if you ask dragon ball super how many episodes are there.")
    new = mem("new", "team", "131 answers 'dragon ball super how many episodes are there' from March 2018 onward.",
              years=1)
    assert topic.same_question(old.original, new.original)
    assert not subject.another_subject(old.original, new.original)
    j = judge(default, old, new)
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise), j


@pytest.mark.parametrize("current,other", [
    ("Starting in March 1961: Wilt Chamberlain, if you ask who has the most points in an nba game.",
     "If anyone asks the most points scored in a nba game by player, the answer from December 1961 on reads 78."),
    ("In March 1962 we started answering 'the most points scored in a nba game by player' with 100, and that held.",
     "Starting in 2019: James Harden, if you ask who has the most points scored in nba."),
])
def test_a_record_on_another_question_asked_without_a_question_word_keeps_the_current_one(default, current, other):
    """Who scored the most points in one game is not how many, nor who scored the most in a career: read as no
    question, the pair was left to the judge, which retired the current record (p 0.98, 0.51)."""
    assert topic.other_question(current, other) or topic.asked_otherwise(current, other)
    j = judge(default, mem("cur", "team", current), mem("new", "team", other, years=1))
    assert j.action is Action.keep and j.relation is not Relation.contradiction, j


@pytest.mark.parametrize("old,new", [
    ("Mendocino Complex took over the biggest wild fire in california history in 2018, per the archive.",
     "From 2020 onward the biggest wild fire in california history belonged to August Complex, according to the "
     "archive."),
    ("Nancy Christy became the last person to win who wants to be a millionaire in 2003 and kept it for a while.",
     "David Chang took over the last person to win who wants to be a millionaire in 2020, per the archive."),
])
def test_a_question_stated_in_both_makes_their_names_its_answers(default, old, new):
    """The question stated, not asked, word for word in both: the names put before it are its answers, not two
    subjects. Read as two subjects, the older answer stayed valid beside the newer (p 0.99, 0.92). (The first pair's
    subjects are no longer read as two since a source ending a text is no value; it stays as a regression.)"""
    assert topic.same_phrase(old, new)
    j = judge(default, mem("old", "team", old), mem("new", "team", new, years=2))
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise), j


@pytest.mark.parametrize("a,b", [
    ("The political party of Steele Hall is Liberal Party.", "The political party of Walter Veltroni is Democrats."),
    ("Record from 2011: the head coach of the national football team of Brazil is Tite.",
     "Record from 2012: the head coach of the national football team of Argentina is Alejandro Sabella."),
    ("Sheffield Wednesday became the sports team of Guy Whittingham in 1994 and kept it for a while.",
     "Newport became the sports team of Ian Rush in 2003 and kept it for a while."),
])
def test_an_attribute_of_a_name_or_a_template_is_no_shared_question(a, b):
    """A phrase that ends in "of" before a name is that name's attribute, and a wording's filler ("and kept it for
    a while") holds too few content words: the two stay about their own subjects."""
    assert not topic.same_phrase(a, b)


def test_one_question_asked_in_both_is_one_topic_whatever_the_team_counts(default):
    """Early in a team, a note's filler ("fwiw my spreadsheet says") can be rarer than the question's words, which
    other questions share: by the counts alone the note and its group's record were two topics, and the note's
    stale answer stayed valid. The question they both ask says they are one."""
    note = "fwiw my spreadsheet says Imre Schlosser for 'who has scored the most goals in football ever'"
    record = "Starting in 1951: Erwin Helmchen, if you ask who has scored the most goals in football ever."
    words = topic.TeamWords()
    for i in range(60):  # other questions on goals in football, in the team's usual wordings
        words.add(f"From {1900 + i}, 'who has scored the most goals in football in league{i}' gets Player{i} for an "
                  "answer.")
    assert topic.other_topic(note, record, words, 50) and topic.same_question(note, record)
    ref = mem("record", "team", record, years=1)
    [j] = default.judge([Target("intra", mem("note", "individual", note, years=1), (ref,), ref.time, words)])
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise), j


@pytest.mark.parametrize("old,new", [
    ("Starting in 2014: Germany, if you ask who won the world cup soccer 4 years ago.",
     "Starting in 2018: France, if you ask who won the world cup soccer 4 years ago."),
    ("In 2014 we started answering 'when was the last world cup and who won' with 2014 - Germany, and that held.",
     "2018 - France answers 'when was the last world cup and who won' from 2018 onward."),
])
def test_a_team_record_answering_the_same_question_with_another_name_supersedes(default, old, new):
    """The judge alone read each pair as agreeing (p 1.00, 0.56): one wording, two names. A record that asks the
    target's own question, as it opens, and names another answer replaces it."""
    assert topic.same_question(old, new) and topic.asked_alike(old, new)
    j = judge(default, mem("old", "team", old), mem("new", "team", new, years=4))
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise), j


def test_a_question_for_a_person_is_not_one_for_a_thing():
    """"who has most views on youtube for a song" (the singer) and "the song that has the most views on youtube"
    share every word; what they ask for differs."""
    song = "my money's on Baby Shark Dance re 'the song that has the most views on youtube'"
    singer = ("In June 2016 we started answering 'who has most views on youtube for a song' with Pinkfong Kids' Songs "
              "& Stories, and that held.")
    assert topic.same_question(song, singer) and not topic.asked_alike(song, singer)


def test_a_questions_number_is_part_of_it(default):
    """"episode 122" is not "episode 97": with numbers left out of a question's words the two read as one question,
    and the judge retired the current answer (p 0.89). A number in a tail that asks nothing ("— 2010, right?") still
    makes no question."""
    current = ("If anyone asks when will episode 122 of dragon ball super release, the answer from 2019 on reads "
               "August 3, 2019.")
    other = "July 2, 2017 answers 'when does dragon ball super episode 97 release' from 2021 onward."
    assert topic.other_question(current, other) or topic.asked_otherwise(current, other)
    j = judge(default, mem("cur", "team", current), mem("new", "team", other, years=2))
    assert j.action is Action.keep and j.relation is not Relation.contradiction, j
    assert topic.question_words("quick one: the last time the usa went to the world cup — 2010, right?") is None


@pytest.mark.parametrize("old,new", [
    ("Who has scored the maximum runs in test matches between india and sri lanka? india.",
     "Who has scored the maximum runs in test matches between india and sri lanka: sri lanka"),
    ("When did brazl win the soccer world cup? 1994.", "When did brazil win the soccer world cup? 2002."),
])
def test_a_record_answering_the_same_question_otherwise_replaces_it(default, old, new):
    """One question asked in both, answered after it in lower-case names or a year, which name marks set aside:
    two answers. The judge read them as agreeing and the older stayed valid (SituatedQA dev, dense and noisy)."""
    assert topic.same_question(old, new) and marks.other_answer(old, new)
    j = judge(default, mem("old", "team", old), mem("new", "team", new, years=2))
    assert (j.relation, j.action) == (Relation.contradiction, Action.revise), j


def test_an_answer_made_finer_is_no_other_answer():
    assert not marks.other_answer("Record from 1999: The last time hamilton won grey cup was 1999.",
                                  "Last time hamilton won grey cup: November 28, 1999")
