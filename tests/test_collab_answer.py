"""HiCoMER's grounded answers: serialisation, the prompt holding only the evidence, and a real SmolLM2 answer."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from memgraft.collab.answer.grounded import (
    NO_EVIDENCE,
    AnswerResult,
    CollabAnswer,
    answer_question,
    evidence_block,
    serialise_memory,
)
from memgraft.collab.types import Memory
from memgraft.config import GenerationSettings
from memgraft.models.llm.session import LLMSession
from tests.doubles import ScriptedLLM


def mem(mid: str, typ: str, text: str, when: str, *, maintained: str | None = None, maintained_at: str | None = None,
        valid: bool = True) -> Memory:
    t = datetime.fromisoformat(when).replace(tzinfo=timezone.utc)
    return Memory(memory_id=mid, team="lab", group_id="g", type=typ, author="ana", original=text,
                  maintained=maintained or text, time=t, relation=None, action=None, valid=valid,
                  maintained_at=datetime.fromisoformat(maintained_at).replace(tzinfo=timezone.utc) if maintained_at else t)


DECISION = mem("m4", "team", "Team decision: from today the incubation temperature is 30 °C instead of 37 °C.",
               "2025-01-07T09:00:00")
OLD_LOG = mem("m2", "individual", "Log: today's experiment used 37 °C as the incubation temperature.",
              "2025-01-06T09:00:00", valid=False, maintained_at="2025-01-07T09:00:00",
              maintained="[Outdated since 2025-01-07: the temperature is 30 °C] Log: today's experiment used 37 °C "
                         "as the incubation temperature.")
NEW_LOG = mem("m5", "individual", "Log: today's experiment used 30 °C as the incubation\n  temperature.",
              "2025-01-08T09:00:00")
QUESTION = "What incubation temperature should the next experiment use?"


def test_serialise_shows_type_time_and_maintained_text():
    assert serialise_memory(DECISION) == ("[team · 2025-01-07 09:00] Team decision: from today the incubation "
                                          "temperature is 30 °C instead of 37 °C.")
    assert serialise_memory(OLD_LOG) == ("[individual · 2025-01-06 09:00 · revised 2025-01-07 09:00] [Outdated since "
                                         "2025-01-07: the temperature is 30 °C] Log: today's experiment used 37 °C as "
                                         "the incubation temperature.")
    assert serialise_memory(NEW_LOG).endswith("as the incubation temperature.")  # whitespace folded to one line


def test_evidence_block_numbers_lines_and_stops_at_the_budget():
    block, ids = evidence_block([DECISION, OLD_LOG, NEW_LOG], max_tokens=2000)
    assert ids == ["m4", "m2", "m5"] and block.splitlines()[0].startswith("1. [team · 2025-01-07 09:00]")
    block, ids = evidence_block([DECISION, OLD_LOG, NEW_LOG], max_tokens=40)  # 160 characters: two lines
    assert ids == ["m4"] and len(block.splitlines()) == 1
    block, ids = evidence_block([OLD_LOG], max_tokens=10)  # the first memory alone is cut, not left out
    assert ids == ["m2"] and block.endswith(" …") and len(block) <= 10 * 4 + 2


class WordCounter:
    """A counter that is not the 4-characters estimate: one token a word."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, tokens: int) -> str:
        return " ".join(text.split()[:tokens]) + " …"


def test_evidence_block_counts_in_the_given_counters_tokens():
    words = [len(f"{i}. {serialise_memory(m)}".split()) for i, m in enumerate((DECISION, OLD_LOG), 1)]
    block, ids = evidence_block([DECISION, OLD_LOG, NEW_LOG], max_tokens=sum(words), counter=WordCounter())
    assert ids == ["m4", "m2"] and len(block.split()) == sum(words)
    assert evidence_block([DECISION, OLD_LOG, NEW_LOG], max_tokens=sum(words))[1] == ["m4"]  # the estimate: fewer
    block, ids = evidence_block([OLD_LOG], max_tokens=5, counter=WordCounter())
    assert ids == ["m2"] and block == "1. [individual · 2025-01-06 09:00 …"


def test_answer_from_the_evidence_only_with_a_scripted_llm():
    llm = ScriptedLLM([json.dumps({"answer": "Use 30 °C, per the team decision of 2025-01-07."})])
    session = LLMSession(llm, GenerationSettings(max_new_tokens=64))
    out = answer_question(session, QUESTION, [DECISION, OLD_LOG, NEW_LOG])
    assert isinstance(out, AnswerResult)
    assert out.answer == "Use 30 °C, per the team decision of 2025-01-07." and out.evidence_ids == ["m4", "m2", "m5"]
    assert out.usage.calls == 1 and out.usage.prompt_tokens > 0 and session.usage.calls == 1
    [request] = llm.requests
    assert request.json_schema == CollabAnswer.model_json_schema()
    prompt = "\n".join(m["content"] for m in request.messages)
    assert QUESTION in prompt
    for m in (DECISION, OLD_LOG, NEW_LOG):
        assert serialise_memory(m) in prompt
    assert OLD_LOG.original not in prompt.replace(OLD_LOG.maintained, "")  # never the stale original on its own


def test_a_bad_answer_is_retried_and_usage_counts_both():
    llm = ScriptedLLM(["not json", json.dumps({"answer": "30 °C."})])
    session = LLMSession(llm, GenerationSettings(max_new_tokens=64, json_retries=1))
    out = answer_question(session, QUESTION, [DECISION])
    assert out.answer == "30 °C." and out.usage.calls == 2


def test_no_evidence_answers_without_calling_the_model():
    llm = ScriptedLLM([])
    out = answer_question(LLMSession(llm, GenerationSettings()), QUESTION, [])
    assert out.answer == NO_EVIDENCE and out.evidence_ids == [] and out.usage.calls == 0 and llm.requests == []


@pytest.mark.slow
def test_real_smollm2_answers_from_three_memories(settings):
    from memgraft.models.llm.factory import load_llm

    s = settings.model_copy(deep=True)
    s.generation.max_new_tokens = 96
    session = LLMSession(load_llm(s), s.generation)
    out = answer_question(session, QUESTION, [DECISION, NEW_LOG, OLD_LOG],
                          max_evidence_tokens=s.hicomer.answer_evidence_tokens)
    print(f"SmolLM2: {out.answer!r} ({out.usage})")
    assert CollabAnswer(answer=out.answer).answer.strip()
    assert out.evidence_ids == ["m4", "m5", "m2"] and out.usage.calls >= 1 and out.usage.prompt_tokens > 100
