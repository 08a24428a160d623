"""The eval harness's rows: which bank each method reads, how it ranks, whether it resolves conflicts."""

from __future__ import annotations

from dataclasses import dataclass

UPDATERS = ("judge", "rules", "llm", "gold")


@dataclass(frozen=True)
class MethodSpec:
    """How a method reads memory: which bank, which ranking, and whether it resolves conflicts."""

    bank: str  # "raw", "rules", or "updater" (the run's chosen updater)
    ranking: str  # a baseline retriever's name, or "validity" (HiCoMER's retriever)
    validity: str = "none"  # S_val: "state" (the maintained flag, the default), "learned" (the MLP), "none"
    resolve: bool = False  # drop the lower-priority side of contradicting evidence (answers only)
    label: str = ""  # what a table calls it, where the key names a system whose mechanism it only adapts


METHODS: dict[str, MethodSpec] = {
    "dense": MethodSpec("raw", "dense"),
    "hybrid": MethodSpec("raw", "hybrid"),
    "rerank": MethodSpec("raw", "rerank"),
    "recency": MethodSpec("raw", "recency"),
    "relevance+recency+importance": MethodSpec("raw", "rri"),
    "rules-updater": MethodSpec("rules", "validity", validity="state", resolve=True),
    "hicomer-no-validity": MethodSpec("updater", "validity", validity="none", resolve=True),
    "hicomer-learned-scorer": MethodSpec("updater", "validity", validity="learned", resolve=True),
    # The paper's module ablations (its Table 4): each drops one of HiCoMER's three parts.
    "hicomer-no-updater": MethodSpec("raw", "validity", validity="state", resolve=True),  # nothing maintained
    "hicomer-no-retriever": MethodSpec("updater", "dense", resolve=True),  # plain dense over the maintained bank
    "hicomer-no-resolution": MethodSpec("updater", "validity", validity="state"),  # answers from all evidence
    "hicomer": MethodSpec("updater", "validity", validity="state", resolve=True),
    # The peers the paper compares with (memgraft.collab.evaluate.peer_baselines); the last two ask the LLM.
    "g-memory": MethodSpec("raw", "g-memory", label="g-memory-style groups (no insight or query graph)"),
    "self-rag": MethodSpec("raw", "self-rag", label="self-rag-style validity filter (no critic or reflection tokens)"),
    "mem0": MethodSpec("mem0", "dense", label="mem0-style update ops (no fact extraction)"),
}
# The paper's decision-oriented query types: Decision F1 is scored on these only.
DECISION_TYPES = ("risk_warning", "next_step_decision", "protocol_consistency")
# Methods that call the LLM per group or per retrieved memory: named with --methods, not run by default
# (on a 2-core CPU the bundled SmolLM2 takes seconds a call, thousands of calls a dataset).
LLM_METHODS = ("self-rag", "mem0")
