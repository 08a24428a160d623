"""What a step shows the LLM of its evidence: whole items, in the LLM's tokens, shared fairly by the subqueries.

Why: the evidence used to be joined subquery by subquery and cut at a character
estimate, so the last subqueries' evidence was dropped first and most of the
20 / 5 / 10 / 50 retrieval limits never reached the model. Here each block has its
share of ``hgmem.evidence_tokens`` (entities a quarter, relations a quarter, chunks a
half); its items are taken round-robin over the step's subqueries, each subquery's
in its own ranked order, and whole: every subquery shows its best item before any
shows its second. An item that does not fit is left out and smaller ones after it
may still fit. The step's trace keeps what was retrieved and what was shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from memgraft.graph.store import GraphStore
from memgraft.hgmem.retrieval import StepEvidence
from memgraft.models.llm.tokens import TokenCounter

SHARES = {"entities": 0.25, "relations": 0.25, "chunks": 0.5}
IDS = {"entities": "entity_ids", "relations": "relation_ids", "chunks": "chunk_ids"}
DESCRIPTION_TOKENS = 40  # an entity's or relation's description, at most


@dataclass
class Block:
    ids: list[str] = field(default_factory=list)
    text: str = ""
    tokens: int = 0
    left_out: int = 0  # retrieved, not shown


@dataclass
class Shown:
    blocks: dict[str, Block]

    def prompt_fields(self) -> dict[str, str]:
        return {k: b.text or "(none)" for k, b in self.blocks.items()}

    def trace(self) -> dict[str, object]:
        return {IDS[k]: b.ids for k, b in self.blocks.items()} | {
            "tokens": {k: b.tokens for k, b in self.blocks.items()},
            "left_out": {k: b.left_out for k, b in self.blocks.items()}}


def round_robin(lists: Sequence[Sequence[str]]) -> list[str]:
    """First items of every list, then the second ones, ...; each id once, where it first comes."""
    out: dict[str, None] = {}
    for i in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if i < len(x):
                out.setdefault(x[i], None)
    return list(out)


def pack(ids: Sequence[str], render: Callable[[int, str], str], budget: int, counter: TokenCounter) -> Block:
    """The items that fit in ``budget`` tokens, in order, one line each (``render(position, id)``).

    If not even the first fits, it is shown cut to the budget: a block never comes out empty
    while something was retrieved and there is a budget at all."""
    block = Block()
    lines: list[str] = []
    for item in ids:
        line = render(len(lines), item)
        n = counter.count(line) + 1  # its newline
        if block.tokens + n <= budget:
            lines.append(line)
            block.ids.append(item)
            block.tokens += n
    if not lines and ids and budget > 0:
        line = counter.truncate(render(0, ids[0]), budget - 1)
        lines, block.ids, block.tokens = [line], [ids[0]], counter.count(line) + 1
    block.text = "\n".join(lines)
    block.left_out = len(ids) - len(block.ids)
    return block


def name_of(entity: dict) -> str:
    """An entity's name on one line, as prompts show it and as the evolve schema offers it (a graph's names
    can hold a paragraph break: "Adolescence\n\nThe formal study")."""
    return " ".join(str(entity["name"]).split())


def show(evidence: StepEvidence, store: GraphStore, budget: int, counter: TokenCounter) -> Shown:
    """The step's entities, relations and chunks as the evolve prompt shows them."""
    def entity(_: int, e: str) -> str:
        ent = store.entity(e)
        return f"- {name_of(ent)} ({ent['type']}): {counter.truncate(ent['description'], DESCRIPTION_TOKENS)}"

    def relation(_: int, r: str) -> str:
        rel = store.relation(r)
        return (f"- {name_of(store.entity(rel['source_id']))} -- {name_of(store.entity(rel['target_id']))}: "
                f"{counter.truncate(rel['description'], DESCRIPTION_TOKENS)}")

    def chunk(i: int, c: str) -> str:
        return f"[{i + 1}] {' '.join(store.chunk(c)['text'].split())}"

    per = evidence.per_subquery
    renders = {"entities": entity, "relations": relation, "chunks": chunk}
    return Shown({k: pack(round_robin([getattr(r, IDS[k]) for r in per]), renders[k], int(budget * SHARES[k]),
                          counter) for k in SHARES})
