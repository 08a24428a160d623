"""HiCoMER's grounded answers: the resolved memories are the only thing the model reads.

Each memory is serialised with its type, its time and its *maintained* text, so
the model sees team authority, recency and any revision the updater wrote
("[Outdated since …] …"), never the original wording of a revised memory.

No evidence: the model is not called; the answer is the fixed :data:`NO_EVIDENCE`
with zero usage. A model asked to answer from nothing can only guess from its
weights, which is the very ungrounded answer this step exists to prevent, and a
fixed string keeps the case cheap and easy to count in evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from pydantic import BaseModel, Field

from memgraft.collab.types import Memory
from memgraft.models.llm.base import Message
from memgraft.models.llm.session import LLMSession, Usage
from memgraft.models.llm.tokens import EstimatedCounter, TokenCounter

NO_EVIDENCE = "The team's memory holds no record that answers this question."

SYSTEM = (
    "You answer questions about a team's work from the team's memory records, and from nothing else. "
    "Team records are decisions, protocols and instructions that bind everyone; individual records are "
    "members' logs, observations and attempts. Reply only with JSON that matches the requested schema."
)

PROMPT = """Records:
{evidence}

Question: {question}
Answer in one sentence, using only the records above. A team record overrides an individual one; a record
marked "Outdated since" no longer holds. If the records do not settle the question, say so.
Reply as JSON: {{"answer": "<your sentence>"}}"""


class CollabAnswer(BaseModel):
    answer: str = Field(min_length=1, max_length=600)


@dataclass
class AnswerResult:
    answer: str
    evidence_ids: list[str]  # the memories the prompt showed, in its order (cut by the budget)
    usage: Usage = field(default_factory=Usage)


def serialise_memory(memory: Memory) -> str:
    """``[team · 2025-01-06 09:00] Team decision: …``; a revised memory adds when it was revised."""
    head = f"{memory.type} · {memory.time:%Y-%m-%d %H:%M}"
    if memory.revised:
        head += f" · revised {memory.maintained_at:%Y-%m-%d %H:%M}"
    return f"[{head}] {' '.join(memory.maintained.split())}"


def evidence_block(evidence: Sequence[Memory], max_tokens: int,
                   counter: TokenCounter | None = None) -> tuple[str, list[str]]:
    """Numbered lines in the given order until the budget is spent; the first is cut to fit if it must.

    ``counter`` counts in the answering LLM's own tokens (:func:`memgraft.models.llm.tokens.token_counter`);
    without one, the budget is the 4-characters-a-token estimate.
    """
    counter = counter or EstimatedCounter("estimate")
    lines: list[str] = []
    ids: list[str] = []
    for m in evidence:
        line = f"{len(lines) + 1}. {serialise_memory(m)}"
        if counter.count("\n".join([*lines, line])) > max_tokens:
            if lines:
                break
            line = counter.truncate(line, max_tokens)
        lines.append(line)
        ids.append(m.memory_id)
    return "\n".join(lines), ids


def answer_messages(question: str, block: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": PROMPT.format(evidence=block, question=question.strip())}]


def answer_question(session: LLMSession, question: str, evidence: Sequence[Memory], *,
                    max_evidence_tokens: int = 1200, counter: TokenCounter | None = None) -> AnswerResult:
    """One schema-constrained answer from ``evidence`` only (already resolved and in rank order); ``counter``:
    the LLM's token counter for the evidence budget (see :func:`evidence_block`)."""
    if not evidence:
        return AnswerResult(answer=NO_EVIDENCE, evidence_ids=[], usage=Usage())
    block, ids = evidence_block(evidence, max_evidence_tokens, counter)
    before = session.usage.copy()
    reply = session.ask(CollabAnswer, answer_messages(question, block), "collaborative answer")
    return AnswerResult(answer=reply.answer.strip(), evidence_ids=ids, usage=session.usage.minus(before))
