"""HiCoMER and its baselines on one dataset: the updater's metrics, then methods x metrics.

A dataset folder (``memgraft.collab.data``: stream, questions, gold decisions) is replayed
into banks, one per way of maintaining memory:

* ``raw``: no maintenance; every memory stays valid with its original text. What flat
  RAG systems see, so the retrieval baselines read it.
* ``rules``: the rule-based updater (the paper's baseline updater).
* the chosen updater (``judge``, the default: the bundled trained pair judge; ``llm``: the
  configured LLM, a trained checkpoint or the cluster's; ``gold``: the dataset's own
  decisions replayed, an oracle that isolates the retriever).

Each maintained bank's validity flags are scored against the gold state (precision:
stale memories left valid; recall: current ones wrongly outdated). Teams are split into
train and test teams: the learned validity scorer of each maintained bank is trained on
the train teams' questions (the library's ``train_validity``) and every method is scored
on the test teams' questions, each asked as of its own time. Retrieval metrics (ORR@5,
CRR@5, NDCG@k, P@1) come from each method's own ranking, before any answer-time conflict
resolution; the resolution only decides what an answer is given (and ``dropped/q``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from memgraft.collab.evaluate import metrics
from memgraft.collab.bank import MemoryBank, open_bank
from memgraft.collab.answer.conflicts import ConflictJudge
from memgraft.collab.evaluate.baselines import (DenseRetriever, HybridRetriever, MemoryRetriever, RecencyRetriever,
                                       RelevanceRecencyImportance, RerankRetriever)
from memgraft.collab.data import Dataset, Row
from memgraft.collab.types import Action, Decision, Memory, MemoryGroup, MemoryQuestion, Relation
from memgraft.config import Settings
from memgraft.ids import content_hash
from memgraft.models.embedder import Embedder
from memgraft.models.llm.base import LLM
from memgraft.models.reranker import Reranker

from memgraft.collab.evaluate.methods import DECISION_TYPES, LLM_METHODS, METHODS, UPDATERS


@dataclass
class EvalOptions:
    methods: Sequence[str] = tuple(m for m in METHODS if m not in LLM_METHODS)
    updater: str = "judge"  # the bank HiCoMER's rows read: judge, rules, llm or gold
    k: int = 10  # ranked list scored by NDCG@k; ORR and CRR use its top 5
    evidence: int = 5  # memories an answer is given
    test_fraction: float = 0.5  # share of teams whose questions are scored (the rest train the scorer)
    max_questions: int | None = None  # scored questions at most (the first, in file order)
    answers: int = 0  # questions per method answered by the LLM for ROUGE-L / Decision F1 (0: none)
    seed: int = 0
    banks_url: str | None = None  # build the banks in this PostgreSQL database (a schema each), not SQLite files


@dataclass
class EvalReport:
    updaters: dict[str, dict[str, float]] = field(default_factory=dict)
    validity: dict[str, dict[str, float]] = field(default_factory=dict)  # by bank: flags against the gold state
    methods: dict[str, dict[str, float]] = field(default_factory=dict)
    scorer_training: dict[str, dict[str, Any]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    questions: list[Row] = field(default_factory=list)


# -- banks -----------------------------------------------------------------------------------


def stream_groups(dataset: Dataset) -> list[MemoryGroup]:
    """The stream's groups, validated, each team's in time order (the bank's rule)."""
    groups = [MemoryGroup.model_validate(g) for g in dataset.groups]
    return sorted(groups, key=lambda g: (g.team, g.time))


def gold_decisions(group: MemoryGroup, gold: Sequence[Row], bank_state: dict[str, str]) -> list[Decision]:
    """The dataset's gold decisions for one group as bank decisions (``bank_state``: id -> maintained text)."""
    out = []
    for i, row in enumerate(gold):
        before = bank_state[row["memory_id"]]
        after = row["maintained"] if row["action"] == "revise" else before
        out.append(Decision(
            decision_id="gold-" + content_hash(group.team, group.group_id, row["memory_id"], row["level"], i),
            team=group.team, memory_id=row["memory_id"], group_id=group.group_id, decided_at=group.time,
            level=row["level"], relation=Relation(row["relation"]), action=Action(row["action"]),
            before=before, after=after, valid_before=True, valid_after=bool(row["valid"]), decided_by="gold"))
        bank_state[row["memory_id"]] = after
    return out


def bank_location(workdir: Path, how: str, banks_url: str | None = None) -> str | Path:
    """Where the eval builds its ``how`` bank: a SQLite file in ``workdir`` (``build_bank`` empties it), or with
    ``banks_url`` (``postgresql://…``) a new, empty schema of its own in that database."""
    if banks_url:
        from memgraft.collab.bank.pg_schema import fresh_schema

        return fresh_schema(banks_url, f"memgraft_eval_{how}")
    return workdir / f"bank-{how}.sqlite"


def build_bank(path: str | Path, dataset: Dataset, embedder: Embedder, how: str, settings: Settings,
               llm: LLM | None = None) -> tuple[MemoryBank, dict[str, Any]]:
    """Replay the stream into the empty bank at ``path`` (a SQLite file, created, or a ``postgresql://`` URL):
    ``raw`` (no decisions), ``gold``, ``rules`` or ``llm``."""
    from memgraft.collab.maintain.updater import MemoEmbedder

    if not isinstance(path, str):
        Path(path).unlink(missing_ok=True)
    bank = open_bank(path, MemoEmbedder(embedder))  # the updater's plan embeds the group; the write reuses it
    started = time.perf_counter()
    groups = stream_groups(dataset)
    info: dict[str, Any] = {"groups": len(groups)}
    if how in ("raw", "gold"):
        gold_by_group: dict[tuple[str, str], list[Row]] = {}
        for row in dataset.gold:
            gold_by_group.setdefault((row["team"], row["group_id"]), []).append(row)
        state: dict[str, str] = {}
        for g in groups:
            state.update({m.memory_id: m.content for m in g.memories})
            decisions = gold_decisions(g, gold_by_group.get((g.team, g.group_id), []), state) if how == "gold" else []
            bank.apply_group(g, decisions)
    else:
        from memgraft.collab.maintain.policies import make_policy
        from memgraft.collab.maintain.updater import Updater

        if how == "mem0":
            from memgraft.collab.evaluate.peer_baselines import Mem0Policy
            from memgraft.models.llm.factory import load_llm

            policy: Any = Mem0Policy(llm or load_llm(settings), settings.generation)
        else:
            policy = make_policy(settings, kind=how, llm=None if settings.hicomer.updater_model else llm,
                                 embedder=embedder)
        updater = Updater(bank, policy, settings.hicomer)
        for g in groups:
            updater.apply(g)
        info["policy"] = policy.name
    info["seconds"] = time.perf_counter() - started
    return bank, info


def updater_scores(bank: MemoryBank, gold: Sequence[Row]) -> dict[str, float]:
    """Conflict F1 and Maintenance Accuracy of a bank's decision log against the gold decisions."""
    predicted: dict[tuple[str, str], Decision] = {}
    for team in bank.teams():
        for d in bank.decisions(team):
            predicted[(d.group_id, d.memory_id)] = d
    key = [(g["group_id"], g["memory_id"]) for g in gold]
    relations = {k: str(predicted[k].relation) for k in key if k in predicted}
    f1 = metrics.conflict_f1(relations, {k: g["relation"] for k, g in zip(key, gold)})
    decided = {k: {"relation": str(predicted[k].relation), "action": str(predicted[k].action),
                   "valid": predicted[k].valid_after} for k in key if k in predicted}
    wanted = {k: {"relation": g["relation"], "action": g["action"], "valid": g["valid"]} for k, g in zip(key, gold)}
    # a memory the updater never retrieved was kept: right where the gold says neutral/keep, and a miss where it
    # says revise (or compatible), however leaving it alone is read
    accuracy = metrics.maintenance_accuracy(
        {k: decided.get(k) or ({"relation": "neutral", "action": "keep"} if w["action"] == "keep" else None)
         for k, w in wanted.items()}, wanted)
    from memgraft.collab.evaluate.counts import ht_missed

    return {"conflict_f1": float(f1["f1"]), "conflict_macro_f1": float(f1["macro_f1"]),
            "maintenance_accuracy": accuracy, "gold_decisions": len(gold),
            "decided": sum(k in predicted for k in key), **ht_missed(set(predicted), gold)}


# -- questions -------------------------------------------------------------------------------


def split_teams(questions: Sequence[MemoryQuestion], test_fraction: float, seed: int) -> tuple[set[str], set[str]]:
    """Train and test teams, seeded; with one team, it is both (and the report says so)."""
    teams = sorted({q.team for q in questions})
    random.Random(seed).shuffle(teams)
    n_test = max(1, round(len(teams) * test_fraction))
    test = set(teams[:n_test])
    train = set(teams[n_test:]) or set(test)
    return train, test


def retrieval_scores(ranked: Sequence[str], q: MemoryQuestion, team_ids: set[str], k: int) -> dict[str, float | None]:
    valid = list(q.valid or [])
    return {"orr@5": metrics.orr_at_k(ranked, q.outdated or [], 5),
            "crr@5": metrics.crr_at_k(ranked, [m for m in valid if m in team_ids], 5),
            f"ndcg@{k}": metrics.ndcg_at_k(ranked, valid, k),
            "p@1": metrics.precision_at_1(ranked, valid)}


def validity_state_scores(bank: MemoryBank, dataset: Dataset) -> dict[str, float | int]:
    """The bank's final validity flags against the gold end state (``memories.jsonl``'s ``outdated_at``)."""
    from memgraft.collab.evaluate.counts import validity_counts

    gold = {m["memory_id"]: m.get("outdated_at") is None for m in dataset.memories}
    flagged = {m.memory_id: m.valid for team in bank.teams() for m in bank.memories(team)}
    retired_in = {d.memory_id: d.group_id for team in bank.teams() for d in bank.decisions(team)
                  if d.valid_before and not d.valid_after}  # the group whose decision retired each memory
    return {**metrics.validity_scores(flagged, gold), **validity_counts(flagged, dataset.memories, retired_in)}


@dataclass
class Method:
    """One row of the table: ranks memories for a question, optionally resolving conflicts."""

    name: str
    retrieve: Callable[[str, str, int, datetime | None], list[Memory]]
    judge: ConflictJudge | None = None
    resolve_settings: Any = None

    def evidence(self, bank: MemoryBank, q: MemoryQuestion, k: int) -> tuple[list[Memory], list[Memory], list[str]]:
        """The ranking (what retrieval is scored on), the evidence an answer gets (the ranking after
        conflict resolution when the method resolves) and the dropped ids."""
        memories = self.retrieve(q.team, q.question, k, q.time)
        if self.judge is None or len(memories) < 2:
            return memories, memories, []
        from memgraft.collab.answer.resolve import resolve

        t0, t_now = bank.time_span(q.team, q.time)
        result = resolve(memories, self.judge.contradicts(memories, t_now), settings=self.resolve_settings,
                         t0=t0, t_now=t_now)
        return memories, list(result.kept), [d.item.memory_id for d in result.dropped]


def _ranked_memories(r: MemoryRetriever) -> Callable[[str, str, int, datetime | None], list[Memory]]:
    return lambda team, question, k, as_of: [x.memory for x in r.retrieve(team, question, k, as_of)]


# -- the run ---------------------------------------------------------------------------------


def run_eval(dataset: Dataset, settings: Settings, workdir: str | Path, options: EvalOptions, *,
             embedder: Embedder, reranker: Reranker, llm: LLM | None = None,
             log: Callable[[str], None] = lambda s: None) -> EvalReport:
    """Build the banks, score the updaters, train the validity scorers, score every method."""
    from memgraft.collab.maintain.policies import make_policy
    from memgraft.collab.retrieve.retriever import ValidityRetriever
    from memgraft.collab.retrieve.validity import StateValidity, ValidityScorer, build_pairs, train_validity

    unknown = [m for m in options.methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; known: {', '.join(METHODS)}")
    if options.updater not in UPDATERS:
        raise ValueError(f"updater must be one of {UPDATERS}, not {options.updater!r}")
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    report = EvalReport(info={"updater": options.updater, "reranker": getattr(reranker, "name", type(reranker).__name__)})

    wanted = {"updater" if METHODS[m].bank == "updater" else METHODS[m].bank for m in options.methods}
    bank_kind = {"raw": "raw", "rules": "rules", "mem0": "mem0", "updater": options.updater}
    if llm is None and any(m in LLM_METHODS for m in options.methods):
        from memgraft.models.llm.factory import load_llm

        llm = load_llm(settings)
    banks: dict[str, MemoryBank] = {}
    for role in sorted(wanted):
        how = bank_kind[role]
        existing = next((b for r, b in banks.items() if bank_kind[r] == how), None)
        if existing is not None:
            banks[role] = existing
            continue
        log(f"building the {how} bank")
        bank, info = build_bank(bank_location(work, how, options.banks_url), dataset, embedder, how, settings, llm)
        banks[role] = bank
        report.info[f"bank_{how}"] = info
        if how != "raw" and dataset.gold:
            report.updaters[info.get("policy", how)] = {**updater_scores(bank, dataset.gold), "seconds": info["seconds"]}
        if dataset.memories:
            report.validity[info.get("policy", how)] = validity_state_scores(bank, dataset)

    questions = [MemoryQuestion.model_validate(q) for q in dataset.questions]
    train_teams, test_teams = split_teams(questions, options.test_fraction, options.seed)
    report.info.update(train_teams=len(train_teams), test_teams=len(test_teams),
                       same_teams=train_teams == test_teams)
    train_q = [q for q in questions if q.team in train_teams]
    test_q = [q for q in questions if q.team in test_teams][: options.max_questions]
    team_memories = {m["memory_id"] for m in dataset.memories if m["type"] == "team"}

    scorers: dict[str, ValidityScorer] = {}  # by bank kind: two roles on one bank share one scorer
    for how in sorted({bank_kind[METHODS[m].bank] for m in options.methods if METHODS[m].validity == "learned"}):
        log(f"training the validity scorer on the {how} bank")
        bank = next(banks[r] for r in banks if bank_kind[r] == how)
        started = time.perf_counter()
        h = settings.hicomer
        pairs = build_pairs(bank, train_q, embedder, negatives_per_positive=h.validity_negatives,
                            neighbours=h.candidate_top_n, seed=options.seed)
        scorer = ValidityScorer.from_settings(embedder.dim, h)
        losses = train_validity(scorer, pairs, epochs=h.validity_epochs, lr=h.validity_lr,
                                batch_size=h.validity_batch_size, seed=options.seed) if len(pairs) else []
        scorers[how] = scorer.eval()
        report.scorer_training[how] = {"pairs": len(pairs), "first_loss": losses[0] if losses else None,
                                       "last_loss": losses[-1] if losses else None,
                                       "seconds": time.perf_counter() - started}

    conflict_policy = make_policy(settings, kind=settings.hicomer.conflict_judge, llm=llm, embedder=embedder,
                                  second_opinion=False)
    methods = []
    for name in options.methods:
        spec = METHODS[name]
        bank = banks[spec.bank]
        if spec.ranking == "validity":
            s_val = {"learned": lambda: scorers.get(bank_kind[spec.bank]), "none": lambda: None,
                     "state": lambda: StateValidity(settings.hicomer.validity_state_logit)}[spec.validity]()
            retriever = ValidityRetriever(bank, embedder, reranker, s_val, settings.hicomer)
            retrieve = _validity_memories(retriever)
        else:
            retrieve = _ranked_memories(_baseline(spec.ranking, bank, reranker, settings, llm))
        # Conflicts between retrieved memories: hicomer.conflict_judge (the pair judge by default; pairwise
        # LLM judgements, k*(k-1)/2 per question, would dominate the run on a CPU).
        methods.append(Method(name, retrieve, ConflictJudge(conflict_policy) if spec.resolve else None,
                              settings.hicomer))

    session = None
    if options.answers:
        from memgraft.models.llm.session import LLMSession

        if llm is None:
            from memgraft.models.llm.factory import load_llm
            llm = load_llm(settings)
        session = LLMSession(llm, settings.generation)

    for method in methods:
        log(f"scoring {method.name}")
        bank = banks[METHODS[method.name].bank]
        rows, started = [], time.perf_counter()
        for i, q in enumerate(test_q):
            ranked, evidence, dropped = method.evidence(bank, q, options.k)
            ids = [m.memory_id for m in ranked]
            extra = q.model_extra or {}
            row: Row = {"method": method.name, "id": q.id, "retrieved": ids, "dropped": dropped,
                        "asked": extra.get("asked"), "qtype": extra.get("qtype"),
                        **retrieval_scores(ids, q, team_memories, options.k)}
            if session is not None and i < options.answers and q.answer:
                from memgraft.collab.answer.grounded import answer_question
                from memgraft.models.llm.tokens import token_counter

                result = answer_question(session, q.question, evidence[: options.evidence],
                                         max_evidence_tokens=settings.hicomer.answer_evidence_tokens,
                                         counter=token_counter(settings.models.llm, str(settings.cache_path)))
                row.update(answer=result.answer, gold=q.answer, rouge_l=metrics.rouge_l(result.answer, q.answer))
                if row["qtype"] in DECISION_TYPES:  # typeless (real) questions: not applicable, not scored
                    row["decision_f1"] = metrics.decision_f1(result.answer, q.answer)
            rows.append(row)
        report.questions += rows
        spec = METHODS[method.name]
        report.methods[method.name] = {
            **_summarise(rows, options.k, time.perf_counter() - started),
            "updater": "none" if spec.bank == "raw" else bank_kind[spec.bank],  # what maintained the bank it read
            "ranking": spec.ranking if spec.ranking != "validity" else f"S_sem + S_val ({spec.validity})"}
    for bank in {id(b): b for b in banks.values()}.values():
        bank.close()
    return report


def _validity_memories(retriever: Any) -> Callable[[str, str, int, datetime | None], list[Memory]]:
    return lambda team, question, k, as_of: [h.memory for h in retriever.search(team, question, k=k, as_of=as_of)]


def _baseline(name: str, bank: MemoryBank, reranker: Reranker, settings: Settings,
              llm: LLM | None = None) -> MemoryRetriever:
    from memgraft.collab.evaluate.peer_baselines import HierarchicalRetriever, SelfReflectRetriever

    top_n = settings.hicomer.candidate_top_n
    return {"dense": lambda: DenseRetriever(bank), "hybrid": lambda: HybridRetriever(bank, depth=top_n),
            "rerank": lambda: RerankRetriever(bank, reranker, top_n=top_n), "recency": lambda: RecencyRetriever(bank),
            "rri": lambda: RelevanceRecencyImportance(bank), "g-memory": lambda: HierarchicalRetriever(bank),
            "self-rag": lambda: SelfReflectRetriever(bank, llm, settings.generation)}[name]()


def _means(rows: Sequence[Row], k: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in ("orr@5", "crr@5", f"ndcg@{k}", "p@1", "rouge_l", "decision_f1"):
        mean, n = metrics.mean_defined(r.get(key) for r in rows)
        out[key] = mean
        out[f"n_{key}"] = n
    return out


def _by_group(rows: Sequence[Row], key: str, k: int) -> dict[str, dict[str, float]]:
    """Each metric's mean over the rows of each value of ``key`` (those rows that have one), with their count."""
    out: dict[str, dict[str, float]] = {}
    for g in sorted({r[key] for r in rows if r.get(key)}):
        part = [r for r in rows if r.get(key) == g]
        out[g] = {**_means(part, k), "questions": len(part)}
    return out


def _summarise(rows: Sequence[Row], k: int, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = _means(rows, k)
    for name, key in (("by_asked", "asked"),  # "now" and "as_of" questions of the real conversions, scored apart
                      ("by_qtype", "qtype")):  # the generated streams' query types (the paper's per-type tables)
        groups = _by_group(rows, key, k)
        if groups:
            out[name] = groups
    out["questions"] = len(rows)
    out["dropped/q"] = sum(len(r["dropped"]) for r in rows) / len(rows) if rows else 0.0
    out["ms/q"] = 1000 * seconds / len(rows) if rows else 0.0
    return out
