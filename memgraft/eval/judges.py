"""LLM judges for answers that string matching cannot score.

Four judges, each a prompt and the pydantic model its reply is decoded under:

- **correctness** (NarrativeQA-style): does a candidate answer say what one of
  the reference answers says? -> :class:`AnswerVerdict`
- **claim** (NoCha-style): does the system's reply to "is this claim true?"
  call the claim true, false, or neither? -> :class:`ClaimVerdict`. A reply
  that plainly opens with its verdict ("True. ...", "No, ...") is read without
  the LLM (:func:`read_claim_verdict`); only the rest go to the judge.
- **comprehensiveness** and **diversity** (LongBench-style generative
  questions): a 1-10 rating of one answer (:class:`Rating`), or a pairwise
  preference between two answers (:class:`Preference`), asked in both orders
  so neither answer gains from going first.

Every judge goes through one :class:`~memgraft.models.llm.session.LLMSession`
(any backend, counted calls and tokens), decodes under its schema with the
session's retries, and a reply still invalid after them is a :class:`Judged`
with ``value=None`` and its error: recorded as a judge failure, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Generic, Literal, Sequence, TypeVar

from pydantic import BaseModel, Field

from memgraft.config import GenerationSettings
from memgraft.models.llm.base import LLM, Message, generate_structured
from memgraft.models.llm.session import LLMSession, Usage

T = TypeVar("T", bound=BaseModel)

SYSTEM = (
    "You are a careful, impartial grader of answers produced by a question-answering system. "
    "Judge only what the text in front of you says; do not reward length or confident tone. "
    "Reply only with JSON that matches the requested schema."
)

# -- output models ------------------------------------------------------------------------


class AnswerVerdict(BaseModel):
    """Correctness of a candidate against reference answers. The reason comes first so a
    model decoding left to right thinks before it commits."""

    reason: str = Field(max_length=400, description="one or two sentences comparing the candidate to the references")
    correct: bool


class ClaimVerdict(BaseModel):
    reason: str = Field(max_length=300)
    verdict: Literal["true", "false", "unclear"] = Field(
        description="what the reply concludes about the claim; unclear when it commits to neither")


class Rating(BaseModel):
    reason: str = Field(max_length=500)
    score: int = Field(ge=1, le=10)


class Preference(BaseModel):
    reason: str = Field(max_length=500)
    winner: Literal["A", "B", "tie"]


OUTPUT_MODELS: tuple[type[BaseModel], ...] = (AnswerVerdict, ClaimVerdict, Rating, Preference)

# -- prompts ------------------------------------------------------------------------------

CORRECTNESS = """Decide whether a candidate answer to a question about a story is correct.

Question: {question}

Reference answers (any one of them is right; they may be worded differently from each other):
{references}

Candidate answer: {candidate}

The candidate is correct when it states the same fact, person, place or event as at least one reference, \
even in other words, in more detail or with extra context that does not contradict it. It is not correct \
when it names something else, contradicts the references, hedges between several options, or says it \
cannot answer. Spelling slips do not matter.

Give a short reason, then "correct": true or false."""

CLAIM = """A question-answering system was asked whether a claim about a book is true or false. \
Read its reply and say which verdict the reply reaches. Do not judge the claim yourself.

Claim: {claim}

System's reply: {reply}

"true" if the reply concludes the claim is true (or accurate, supported, correct); "false" if it concludes \
the claim is false (or inaccurate, not supported, contradicted); "unclear" if it reaches neither, \
reaches both, or declines to decide."""

CRITERIA = {
    "comprehensiveness": (
        "Comprehensiveness: how much of what the question asks for the answer actually covers. "
        "A comprehensive answer addresses every part and aspect of the question and supports each with "
        "specifics (names, events, causes, consequences) rather than leaving parts out or answering in "
        "generalities."
    ),
    "diversity": (
        "Diversity: how many distinct, relevant perspectives, insights or lines of evidence the answer "
        "brings. A diverse answer looks at the question from several different angles (for example different "
        "people involved, causes, time periods, interpretations) instead of repeating one point in other "
        "words. Points that are irrelevant to the question do not count."
    ),
}

RATING = """Rate one answer to a question on a single criterion.

{criterion}

Question: {question}

Answer: {answer}

Score from 1 to 10: 1-2 the answer barely meets the criterion (or is empty or a refusal), 3-4 weakly, \
5-6 adequately, 7-8 well, 9-10 as fully as one could expect. Judge only this criterion, not style or length \
for its own sake. Give a short reason, then the score."""

PAIRWISE = """Compare two answers to the same question on a single criterion.

{criterion}

Question: {question}

Answer A: {answer_a}

Answer B: {answer_b}

Say which answer is better on this criterion only: "A", "B", or "tie" when neither is clearly better. \
The order in which the answers appear says nothing about their quality. Give a short reason, then the winner."""


def messages(template: str, **fields: object) -> list[Message]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": template.format(**fields)}]


def _references(answers: Sequence[str]) -> str:
    return "\n".join(f"- {a}" for a in answers) or "- (none)"


def _text(answer: str | None) -> str:
    answer = (answer or "").strip()
    return answer if answer else "(no answer)"


# -- reading a NoCha reply without the LLM ---------------------------------------------------------

_TRUE = {"true", "yes", "correct", "accurate"}
_FALSE = {"false", "no", "incorrect", "inaccurate", "wrong", "untrue"}
_LEAD = re.compile(r"^(?:answer\s*:|verdict\s*:|the claim is|this claim is|claim is|it is|it's)\s*", re.I)


def read_claim_verdict(reply: str | None) -> Literal["true", "false"] | None:
    """"true"/"false" when the reply opens with an unambiguous verdict word, else None
    (the LLM judge decides). "True.", "No, ...", "The claim is false: ..." are read;
    "Not true", "Partly true" and anything else are left to the judge."""
    text = _LEAD.sub("", (reply or "").strip().lower(), count=1)
    match = re.match(r"[\"'*(\[]*([a-z]+)\b(?![-'])", text)
    if not match:
        return None
    word = match.group(1)
    return "true" if word in _TRUE else "false" if word in _FALSE else None


# -- the judge ----------------------------------------------------------------------------------


@dataclass
class Judged(Generic[T]):
    """One judgement: the validated reply, or None and the error after every retry."""

    value: T | None
    error: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass
class ClaimJudgement:
    verdict: Literal["true", "false", "unclear"] | None  # None: the judge failed
    source: Literal["parsed", "llm", "no answer"]
    reason: str = ""
    error: str | None = None


@dataclass
class PairwiseJudgement:
    """``score`` is the first answer's share of the two orders: 1 won both, 0.5 split or tied, 0 lost both."""

    score: float | None  # None: a judge failure in either order
    forward: Judged[Preference]
    backward: Judged[Preference]

    @property
    def error(self) -> str | None:
        return self.forward.error or self.backward.error


_WIN = {"A": 1.0, "tie": 0.5, "B": 0.0}


@dataclass
class Judge:
    """The judges over one LLM session. Judging is deterministic by default (temperature 0)."""

    session: LLMSession
    batch_size: int = 32
    failures: list[str] = field(default_factory=list)

    @classmethod
    def from_llm(cls, llm: LLM, generation: GenerationSettings | None = None, *, temperature: float = 0.0,
                 max_new_tokens: int = 512, batch_size: int = 32) -> "Judge":
        gen = (generation or GenerationSettings()).model_copy(
            update={"temperature": temperature, "max_new_tokens": max_new_tokens})
        return cls(LLMSession(llm, gen), batch_size)

    # -- plumbing -----------------------------------------------------------------------
    def ask_many(self, model: type[T], conversations: Sequence[list[Message]], what: str) -> list[Judged[T]]:
        """One ``model`` per conversation, decoded in batches under its schema; usage goes to the session."""
        gen = self.session.generation
        out: list[Judged[T]] = []
        for start in range(0, len(conversations), max(1, self.batch_size)):
            batch = conversations[start:start + max(1, self.batch_size)]
            results = generate_structured(self.session.llm, batch, model, retries=gen.json_retries,
                                          max_new_tokens=gen.max_new_tokens, temperature=gen.temperature,
                                          salvage_cut=gen.salvage_cut_replies)
            for res in results:
                self.session.usage.add(Usage.of(res))
                error = None
                if res.value is None:
                    error = f"{what}: no valid {model.__name__} after {res.attempts} attempts ({'; '.join(res.errors[-2:])})"
                    self.failures.append(error)
                out.append(Judged(res.value, error, res.attempts))
        return out

    # -- the four judges -------------------------------------------------------------------
    def correctness(self, items: Sequence[tuple[str, Sequence[str], str | None]]) -> list[Judged[AnswerVerdict]]:
        """(question, reference answers, candidate) -> is the candidate right?"""
        convs = [messages(CORRECTNESS, question=q, references=_references(refs), candidate=_text(c))
                 for q, refs, c in items]
        return self.ask_many(AnswerVerdict, convs, "correctness judge")

    def claims(self, items: Sequence[tuple[str, str | None]]) -> list[ClaimJudgement]:
        """(claim, the system's reply) -> the verdict the reply reaches. A missing reply is
        "unclear" without a call; a reply opening with its verdict is read without one."""
        out: list[ClaimJudgement | None] = [None] * len(items)
        ask: list[int] = []
        for i, (_, reply) in enumerate(items):
            if not (reply or "").strip():
                out[i] = ClaimJudgement("unclear", "no answer", "the system gave no answer")
            elif (parsed := read_claim_verdict(reply)) is not None:
                out[i] = ClaimJudgement(parsed, "parsed", "the reply opens with its verdict")
            else:
                ask.append(i)
        convs = [messages(CLAIM, claim=items[i][0], reply=_text(items[i][1])) for i in ask]
        for i, j in zip(ask, self.ask_many(ClaimVerdict, convs, "claim judge")):
            if j.ok:
                out[i] = ClaimJudgement(j.value.verdict, "llm", j.value.reason)
            else:
                out[i] = ClaimJudgement(None, "llm", error=j.error)
        return out  # type: ignore[return-value]

    def rate(self, criterion: str, items: Sequence[tuple[str, str | None]]) -> list[Judged[Rating]]:
        """(question, answer) -> a 1-10 score on ``criterion`` ("comprehensiveness" or "diversity")."""
        text = CRITERIA[criterion]
        convs = [messages(RATING, criterion=text, question=q, answer=_text(a)) for q, a in items]
        return self.ask_many(Rating, convs, f"{criterion} rating")

    def compare(self, criterion: str, items: Sequence[tuple[str, str | None, str | None]]) -> list[PairwiseJudgement]:
        """(question, answer, baseline answer) -> the answer's win share over both presentation orders."""
        text = CRITERIA[criterion]
        convs = [messages(PAIRWISE, criterion=text, question=q, answer_a=_text(a), answer_b=_text(b)) for q, a, b in items]
        convs += [messages(PAIRWISE, criterion=text, question=q, answer_a=_text(b), answer_b=_text(a)) for q, a, b in items]
        judged = self.ask_many(Preference, convs, f"{criterion} comparison")
        n = len(items)
        out = []
        for fwd, bwd in zip(judged[:n], judged[n:]):
            score = None
            if fwd.ok and bwd.ok:
                score = (_WIN[fwd.value.winner] + (1.0 - _WIN[bwd.value.winner])) / 2
            out.append(PairwiseJudgement(score, fwd, bwd))
        return out
