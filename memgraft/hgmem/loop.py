"""HGMem's multi-step reasoning (the paper's Algorithm 1).

Step 0 retrieves for the question and builds the first memory. Each later
step judges whether memory suffices; if not, its concerns become subqueries
(local investigation of named memory points, or global exploration beyond
memory), evidence is retrieved, memory evolves by update and insertion, and
from the second step on cohesive points are merged. The loop stops when memory
suffices or after step ``max_step`` (the paper's t; step 0 is the first), then answers from the
memory points and their entities' chunks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Literal

from memgraft.config import Settings
from memgraft.graph.store import GraphStore
from memgraft.hgmem import evidence as shown_evidence
from memgraft.hgmem import prompts
from memgraft.hgmem.memory import HypergraphMemory, InvalidMemoryOperation
from memgraft.hgmem.retrieval import Retriever, StepEvidence, Subquery
from memgraft.models.llm.session import LLMSession, Usage
from memgraft.models.llm.tokens import TokenCounter, token_counter


@dataclass(frozen=True)
class Variant:
    """Which parts of HGMem run: the full method and the paper's ablations."""

    update: bool = True
    merge: bool = True
    concerns: Literal["both", "local", "global"] = "both"


VARIANTS = {
    "hgmem": Variant(),
    "hgmem-no-merge": Variant(merge=False),
    "hgmem-no-update": Variant(update=False),
    "hgmem-local-only": Variant(concerns="local"),
    "hgmem-global-only": Variant(concerns="global"),
}


@dataclass
class Outcome:
    answer: str
    steps: int
    usage: Usage
    trace: dict[str, Any]
    memory: HypergraphMemory | None = None
    seconds: float = 0.0


class HGMemReasoner:
    def __init__(self, store: GraphStore, session: LLMSession, settings: Settings, variant: Variant = Variant(),
                 on_round: Callable[[str], None] | None = None):
        self.store = store
        self.on_round = on_round  # told each round as it ends, in words (round_line): a long question shows life
        self.session = session
        self.settings = settings
        self.hs = settings.hgmem
        self.variant = variant
        self.retriever = Retriever(store, settings.hgmem, explore=variant.concerns != "local")
        self.tokens: TokenCounter = token_counter(settings.models.llm, str(settings.cache_path))

    # -- the loop --------------------------------------------------------------
    def run(self, question: str) -> Outcome:
        t0 = time.perf_counter()
        memory = HypergraphMemory()
        steps: list[dict[str, Any]] = []
        subqueries = [Subquery(question, "initial")]
        stopped = "step limit"
        for index in range(self.hs.max_step + 1):
            step_t0, before_usage = time.perf_counter(), self.session.usage.copy()
            record: dict[str, Any] = {"step": index, "memory_before": memory.snapshot()}
            if index > 0:
                judgement = self.session.ask(prompts.sufficiency_model(self._point_ids(memory)), prompts.messages(
                    prompts.SUFFICIENCY, question=question, memory=self._memory_text(memory),
                    max_concerns=3), f"sufficiency at step {index}")
                record["judgement"] = judgement.model_dump()
                if judgement.sufficient:
                    record.update(self._close(record, memory, step_t0, before_usage))
                    steps.append(record)
                    self._tell(record)
                    stopped = "sufficient"
                    break
                subqueries = self._subqueries(judgement, memory, question)
            evidence = self.retriever.retrieve(subqueries, memory)
            record["subqueries"] = [
                {"text": r.subquery.text, "kind": r.subquery.kind, "point_ids": r.subquery.point_ids,
                 "entity_ids": r.entity_ids, "relation_ids": r.relation_ids, "chunk_ids": r.chunk_ids}
                for r in evidence.per_subquery
            ]
            record["operations"] = self._evolve(question, memory, evidence, index, record)
            if self.variant.merge and index >= 1 and len(memory) >= 2:
                record["operations"].update(self._merge(question, memory, index))
            memory.check_invariants()
            memory.check_grounded(self.store.has_entity)
            record.update(self._close(record, memory, step_t0, before_usage))
            steps.append(record)
            self._tell(record)
        answer, answer_record = self._answer(question, memory, steps)
        usage = self.session.usage
        return Outcome(answer, len(steps), usage.copy(),
                       {"question": question, "stopped": stopped, "steps": steps, "answer": answer_record,
                        "final_memory": memory.snapshot()},
                       memory, time.perf_counter() - t0)

    # -- pieces ----------------------------------------------------------------
    def _tell(self, record: dict[str, Any]) -> None:
        if self.on_round is not None:
            self.on_round(round_line(record, self.hs.max_step + 1))

    def _close(self, record: dict[str, Any], memory: HypergraphMemory, t0: float, before: Usage) -> dict[str, Any]:
        used = self.session.usage.minus(before)
        return {"memory_after": memory.snapshot(), "llm_calls": used.calls, "prompt_tokens": used.prompt_tokens,
                "completion_tokens": used.completion_tokens, "salvaged_replies": used.salvaged,
                "seconds": round(time.perf_counter() - t0, 3)}

    @staticmethod
    def _point_ids(memory: HypergraphMemory) -> list[str]:
        return [p.point_id for p in memory.active_points()]

    def _memory_text(self, memory: HypergraphMemory) -> str:
        return memory.render(max_chars=self.hs.answer_context_tokens // 2, size=self.tokens.count) or "(empty)"

    def _subqueries(self, judgement: prompts.SufficiencyJudgement, memory: HypergraphMemory, question: str) -> list[Subquery]:
        active = [p.point_id for p in memory.active_points()]
        out = []
        for c in judgement.concerns:
            kind = c.kind if self.variant.concerns == "both" else self.variant.concerns
            ids = [p for p in c.point_ids if p in active] or (active if kind == "local" else [])
            out.append(Subquery(c.subquery, kind, ids if kind == "local" else []))
        if out:
            return out
        # "not sufficient" with no concern: explore again, or, where only local investigation runs, look
        # around every memory point once more
        return [Subquery(question, "local", active)] if self.variant.concerns == "local" else [Subquery(question, "global")]

    def _nameable(self, memory: HypergraphMemory, shown: shown_evidence.Shown) -> dict[str, str]:
        """Name -> entity id of every entity this step may put in memory: those it showed the model
        (retrieved entities, and both ends of the relations shown), and those memory already holds."""
        ids = list(shown.blocks["entities"].ids)
        for r in shown.blocks["relations"].ids:
            rel = self.store.relation(r)
            ids += [rel["source_id"], rel["target_id"]]
        ids += [v.entity_id for v in memory.vertices() if v.in_graph]
        return {shown_evidence.name_of(self.store.entity(e)): e for e in dict.fromkeys(ids) if self.store.has_entity(e)}

    def _vertex(self, memory: HypergraphMemory, eid: str) -> str:
        ent = self.store.entity(eid)
        memory.add_vertex(eid, shown_evidence.name_of(ent), True, ent["chunk_ids"], ent["description"])
        return eid

    def _evolve(self, question: str, memory: HypergraphMemory, evidence: StepEvidence, index: int,
                record: dict[str, Any]) -> dict[str, Any]:
        shown = shown_evidence.show(evidence, self.store, self.hs.evidence_tokens, self.tokens)
        record["shown"] = shown.trace()  # what the model read of what was retrieved
        done: dict[str, list[Any]] = {"updates": [], "inserts": [], "rejected": []}
        ids, nameable = self._point_ids(memory), self._nameable(memory, shown)
        if not prompts.can_evolve(ids, self.variant.update, list(nameable)):
            return done  # fewer than two entities to join and nothing to update: no operation to offer
        fields = dict(question=question, memory=self._memory_text(memory),
                      subqueries="; ".join(repr(r.subquery.text) for r in evidence.per_subquery),
                      **shown.prompt_fields())
        model = prompts.evolution_model(ids, self.variant.update, list(nameable))
        template = prompts.EVOLVE if (self.variant.update and ids) else prompts.EVOLVE_INSERT_ONLY
        out = self.session.ask(model, prompts.messages(template, **fields), f"evolution at step {index}")
        for u in getattr(out, "updates", []):
            try:
                vids = [self._vertex(memory, nameable[n]) for n in u.entities]
                vids_all = [*memory.point(u.point_id).vertex_ids, *vids] if u.point_id in ids else vids
                chunks, relations = self._sources(memory, vids_all, evidence, shown)
                p = memory.update(u.point_id, u.description, index, add_vertex_ids=vids, add_chunk_ids=chunks,
                                  add_relation_ids=relations)
                done["updates"].append(p.point_id)
            except (InvalidMemoryOperation, KeyError) as err:
                done["rejected"].append({"op": "update", "point_id": u.point_id, "reason": str(err)})
        for ins in getattr(out, "inserts", []):
            try:
                vids = [self._vertex(memory, nameable[n]) for n in ins.entities]
                chunks, relations = self._sources(memory, vids, evidence, shown)
                if not chunks:
                    raise InvalidMemoryOperation("insert: this step retrieved no chunk to ground it in")
                p = memory.insert(ins.description, vids, chunks, index, fold=self.variant.update,
                                  relation_ids=relations)
                done["inserts"].append(p.point_id)
            except (InvalidMemoryOperation, KeyError) as err:
                done["rejected"].append({"op": "insert", "entities": ins.entities, "reason": str(err)})
        return done

    def _sources(self, memory: HypergraphMemory, vertex_ids: list[str], evidence: StepEvidence,
                 shown: shown_evidence.Shown) -> tuple[list[str], list[str]]:
        """What a new or updated point came from, by the code, of this step's retrieval: the relations it
        retrieved between the point's entities, and the chunks of those relations and entities; where no
        retrieved chunk is theirs, the chunks the model was shown when it wrote the point."""
        vids = set(vertex_ids)
        relations = [r for r in evidence.relation_ids
                     if {self.store.relation(r)["source_id"], self.store.relation(r)["target_id"]} <= vids]
        theirs = {c for v in vids for c in memory.vertex(v).chunk_ids}
        theirs.update(c for r in relations for c in self.store.relation(r)["chunk_ids"])
        chunks = [c for c in evidence.chunk_ids if c in theirs] or list(shown.blocks["chunks"].ids)
        return chunks, relations

    def _merge(self, question: str, memory: HypergraphMemory, index: int) -> dict[str, Any]:
        out = self.session.ask(prompts.merging_model(self._point_ids(memory)), prompts.messages(
            prompts.MERGE, question=question, memory=self._memory_text(memory)), f"merging at step {index}")
        merged, rejected = [], []
        for m in out.merges:
            try:
                merged.append({"into": memory.merge(m.point_ids, m.description, index).point_id, "from": m.point_ids})
            except (InvalidMemoryOperation, KeyError) as err:
                rejected.append({"op": "merge", "point_ids": m.point_ids, "reason": str(err)})
        return {"merges": merged, "rejected_merges": rejected}

    def _answer(self, question: str, memory: HypergraphMemory, steps: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        chunk_ids = memory.chunk_ids()
        source = "memory"
        if not chunk_ids:  # memory stayed empty: fall back to what was retrieved
            chunk_ids = [c for st in steps for sq in st.get("subqueries", []) for c in sq["chunk_ids"]]
            source = "retrieved chunks (memory empty)"
        ranked = [h.id for h in self.store.rank("chunks", question, chunk_ids, len(chunk_ids))]
        block = shown_evidence.pack(ranked, lambda i, c: f"[{i + 1}] {' '.join(self.store.chunk(c)['text'].split())}",
                                    self.hs.answer_context_tokens // 2, self.tokens)
        memory_text = self._memory_text(memory)
        out = self.session.ask(prompts.Answer, prompts.messages(
            prompts.ANSWER_FROM_MEMORY, question=question, memory=memory_text,
            chunks=block.text or "(none)"), "answer")
        # the memory points the answer was given: their lines in the prompt, and whose chunks it read
        cited = [p.point_id for p in memory.active_points()
                 if f"[{p.point_id}] " in memory_text or set(p.chunk_ids) & set(block.ids)]
        return out.answer, {"source": source, "point_ids": cited, "chunk_ids": block.ids, "chunk_tokens": block.tokens,
                            "left_out": block.left_out, "tokens_counted_by": self.tokens.name}


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def round_line(record: dict[str, Any], rounds: int) -> str:
    """One finished step in words: "round 2 of 4: 3 subqueries, 14 entities, 2 points updated, 1 inserted (41 s)"."""
    head = f"round {record['step'] + 1} of {rounds}: "
    if "subqueries" not in record:
        return head + f"memory suffices ({record['seconds']:.0f} s)"
    ops = record.get("operations", {})
    entities = {e for sq in record["subqueries"] for e in sq["entity_ids"]}
    parts = [_n(len(record["subqueries"]), "subquery", "subqueries"), _n(len(entities), "entity", "entities"),
             _n(len(ops.get("updates", [])), "point", "points") + " updated", f"{len(ops.get('inserts', []))} inserted"]
    if ops.get("merges"):
        parts.append(_n(len(ops["merges"]), "merge", "merges"))
    refused = len(ops.get("rejected", [])) + len(ops.get("rejected_merges", []))
    if refused:
        parts.append(f"{refused} refused")
    return head + ", ".join(parts) + f" ({record['seconds']:.0f} s)"
