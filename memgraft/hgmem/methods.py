"""Every method the harness runs, behind one call: HGMem, its ablations, and two baselines.

``naive`` answers from the top dense chunks; ``graph`` answers from one round
of the same graph retrieval HGMem's step 0 does, with no working memory.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from memgraft.config import Settings
from memgraft.graph.store import GraphStore
from memgraft.hgmem import prompts
from memgraft.hgmem.export import to_html_steps
from memgraft.hgmem.evidence import pack, show
from memgraft.hgmem.loop import VARIANTS, HGMemReasoner, Outcome
from memgraft.hgmem.memory import HypergraphMemory
from memgraft.hgmem.retrieval import Retriever, Subquery
from memgraft.models.llm.base import LLM
from memgraft.models.llm.session import LLMSession
from memgraft.models.llm.tokens import token_counter

METHODS = (*VARIANTS, "naive", "graph")
OUTPUT_FIELDS = ("answer", "method", "error", "steps", "llm_calls", "prompt_tokens", "completion_tokens", "seconds",
                 "trace", "traceback", "memory_points", "hyperedge_size")


def naive_rag(question: str, store: GraphStore, session: LLMSession, settings: Settings) -> Outcome:
    t0 = time.perf_counter()
    hits = store.search_chunks(question, settings.hgmem.top_chunks)
    ids = [h.id for h in hits]
    block = pack(ids, lambda i, c: f"[{i + 1}] {' '.join(store.chunk(c)['text'].split())}",
                 settings.hgmem.answer_context_tokens, token_counter(settings.models.llm, str(settings.cache_path)))
    out = session.ask(prompts.Answer, prompts.messages(
        prompts.ANSWER_FROM_PASSAGES, question=question, graph="", chunks=block.text or "(none)"), "answer")
    trace = {"question": question, "retrieved": {"chunk_ids": ids, "scores": [h.score for h in hits]},
             "shown": {"chunk_ids": block.ids, "tokens": {"chunks": block.tokens}}}
    return Outcome(out.answer, 1, session.usage.copy(), trace, None, time.perf_counter() - t0)


def graph_rag(question: str, store: GraphStore, session: LLMSession, settings: Settings) -> Outcome:
    t0 = time.perf_counter()
    ev = Retriever(store, settings.hgmem).retrieve([Subquery(question, "initial")], HypergraphMemory())
    shown = show(ev, store, settings.hgmem.answer_context_tokens,
                 token_counter(settings.models.llm, str(settings.cache_path)))
    fields = shown.prompt_fields()
    out = session.ask(prompts.Answer, prompts.messages(
        prompts.ANSWER_FROM_PASSAGES, question=question,
        graph=f"\nEntities:\n{fields['entities']}\nRelations:\n{fields['relations']}\n", chunks=fields["chunks"]),
        "answer")
    trace = {"question": question, "retrieved": {"entity_ids": ev.entity_ids, "relation_ids": ev.relation_ids,
                                                 "chunk_ids": ev.chunk_ids}, "shown": shown.trace()}
    return Outcome(out.answer, 1, session.usage.copy(), trace, None, time.perf_counter() - t0)


def run_method(method: str, question: str, store: GraphStore, llm: LLM, settings: Settings,
               on_round: Callable[[str], None] | None = None) -> Outcome:
    """Answer ``question`` with ``method``; HGMem's loop tells ``on_round`` each round as it ends."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    session = LLMSession(llm, settings.generation)
    if method == "naive":
        return naive_rag(question, store, session, settings)
    if method == "graph":
        return graph_rag(question, store, session, settings)
    return HGMemReasoner(store, session, settings, VARIANTS[method], on_round).run(question)


def _safe_name(qid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", qid)[:120] or "question"


def answer_record(record: dict[str, Any], method: str, store: GraphStore, llm: LLM, settings: Settings,
                  trace_dir: str | Path, on_round: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One output line for one question record; a failure becomes a line with its error, never an exception."""
    t0 = time.perf_counter()
    try:
        return record_answer(record, method, store, llm, settings, trace_dir, on_round)[0]
    except Exception as err:  # a question's failure must not stop the others
        return {**_passed_through(record, method), "answer": None, "error": f"{type(err).__name__}: {err}",
                "steps": 0, "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                "seconds": round(time.perf_counter() - t0, 3), "trace": None, "traceback": traceback.format_exc(limit=4)}


def record_answer(record: dict[str, Any], method: str, store: GraphStore, llm: LLM, settings: Settings,
                  trace_dir: str | Path, on_round: Callable[[str], None] | None = None) -> tuple[dict[str, Any], Outcome]:
    """Answer one question record and write its trace (JSON, plus the HTML page for HGMem): the output line
    and the outcome behind it. Raises on failure, so a caller such as the HTTP service can tell a lost model
    replica from a model's bad output."""
    t0 = time.perf_counter()
    qid = str(record["id"])
    outcome = run_method(method, str(record["question"]), store, llm, settings, on_round)
    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    path = trace_dir / f"{_safe_name(qid)}.{method}.json"
    path.write_text(json.dumps(outcome.trace, default=str))
    if outcome.memory is not None:
        snaps = [s["memory_after"] for s in outcome.trace["steps"]]
        to_html_steps(snaps, path.with_suffix(".html"), title=f"{qid}: {record['question']}",
                      labels=[f"after step {s['step']}" for s in outcome.trace["steps"]])
    return {**_passed_through(record, method), "answer": outcome.answer, "error": None, "steps": outcome.steps,
            "llm_calls": outcome.usage.calls, "prompt_tokens": outcome.usage.prompt_tokens,
            "completion_tokens": outcome.usage.completion_tokens, "seconds": round(time.perf_counter() - t0, 3),
            "trace": str(path), **memory_shape(outcome.memory)}, outcome


def memory_shape(memory: HypergraphMemory | None) -> dict[str, Any]:
    """The final memory's points and their mean entities per point (the paper's Table 3: hyperedge size)."""
    if memory is None:
        return {}
    points = memory.active_points()
    size = sum(len(p.vertex_ids) for p in points) / len(points) if points else None
    return {"memory_points": len(points), "hyperedge_size": size}


def _passed_through(record: dict[str, Any], method: str) -> dict[str, Any]:
    """The record's own fields; one that an output field would overwrite (a reference "answer") is kept as
    "gold_<name>"."""
    base = {(f"gold_{k}" if k in OUTPUT_FIELDS else k): v for k, v in record.items() if k not in ("id", "question")}
    base.update({"id": str(record["id"]), "question": record.get("question", ""), "method": method})
    return base
