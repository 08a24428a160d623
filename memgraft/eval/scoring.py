"""Per-dataset scores of one method's answer lines.

Each scorer takes the answer lines of one method (``answers.jsonl`` rows, gold fields
included) and returns ``(metrics, per_question)``: the method's averages, and one dict
per question saying how it scored and why.

Two kinds of failure are kept apart. A question the *system* failed (an ``error`` line,
no answer) scores as the worst outcome: EM and F1 0, recall 0, judged wrong, rated 1,
losing a comparison. A *judge* that gave no valid verdict after its retries is not
guessed: the question is left out of that metric's mean and counted in
``judge_failures``; every mean says how many questions it is over (``n_<metric>``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

from memgraft.eval import musique
from memgraft.eval.judges import Judge

Row = dict[str, Any]
Scored = tuple[dict[str, Any], list[dict[str, Any]]]


def mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def failed(row: Mapping[str, Any]) -> bool:
    return bool(row.get("error")) or row.get("answer") is None


def _tokens(row: Mapping[str, Any]) -> int:
    return int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)


def usage_metrics(rows: Sequence[Row]) -> dict[str, Any]:
    """Cost per question, over every line (a failed question costs what its line says)."""
    return {
        "questions": len(rows),
        "failures": sum(failed(r) for r in rows),
        "tokens/q": mean([_tokens(r) for r in rows]),
        "llm_calls/q": mean([float(r.get("llm_calls") or 0) for r in rows]),
        "seconds/q": mean([float(r.get("seconds") or 0.0) for r in rows]),
        "steps/q": mean([float(r.get("steps") or 0) for r in rows]),
        **hyperedge_sizes(rows),
    }


def question_kind(row: Mapping[str, Any]) -> str | None:
    """The dataset's own label of a question's kind: a ``type``/``question_type`` field, or MuSiQue's
    id prefix (``2hop__...``, ``3hop1__...``)."""
    kind = row.get("question_type") or row.get("type")
    if kind:
        return str(kind)
    qid = str(row.get("id", ""))
    return qid.split("__", 1)[0] if "__" in qid else None


def hyperedge_sizes(rows: Sequence[Row]) -> dict[str, Any]:
    """Mean entities per memory point of each question's final memory (HGMem methods only), overall and
    per question kind where the dataset labels it (the paper's Table 3)."""
    sized = [r for r in rows if r.get("hyperedge_size") is not None]
    if not sized:
        return {}
    out: dict[str, Any] = {"hyperedge_size": mean([float(r["hyperedge_size"]) for r in sized])}
    kinds = sorted({k for r in sized if (k := question_kind(r))})
    for kind in kinds if len(kinds) > 1 else []:
        out[f"hyperedge_size[{kind}]"] = mean([float(r["hyperedge_size"]) for r in sized if question_kind(r) == kind])
    return out


# -- MuSiQue ---------------------------------------------------------------------------------


ANSWER_K = 5  # answer_recall@5: the supporting passages among the first 5 the answer step was given


def answer_chunk_ids(trace: Mapping[str, Any] | None) -> list[str] | None:
    """The chunks the answer step was given, in the order its prompt shows them: HGMem's ``answer`` chunks (ranked
    by the question), a baseline's ``shown`` chunks; None where the trace says neither."""
    if not trace:
        return None
    answer = trace.get("answer")
    if isinstance(answer, Mapping) and "chunk_ids" in answer:
        return list(answer["chunk_ids"])
    shown = trace.get("shown")
    if isinstance(shown, Mapping) and "chunk_ids" in shown:
        return list(shown["chunk_ids"])
    return None


def memory_grounding(trace: Mapping[str, Any] | None, entity_ids: set[str], chunk_ids: set[str]) -> dict[str, int]:
    """Of a trace's final memory: its vertices, those that are entities of the graph (``entity_ids``), its active
    points, and those citing at least one chunk of the graph (``chunk_ids``). Empty without a final memory."""
    final = (trace or {}).get("final_memory")
    if not isinstance(final, Mapping):
        return {}
    vertices = [v["entity_id"] for v in final.get("vertices") or []]
    points = [p for p in final.get("points") or [] if p.get("merged_into") is None]
    return {"vertices": len(vertices), "vertices_in_graph": sum(v in entity_ids for v in vertices),
            "points": len(points), "points_citing": sum(bool(set(p.get("chunk_ids") or []) & chunk_ids) for p in points)}


def _share(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


def score_musique(
    rows: Sequence[Row],
    retrieved_chunks: Callable[[Row], list[str]] | None = None,
    doc_of: Mapping[str, str] | None = None,
    passage_ids: musique.PassageIds | None = None,
    trace_of: Callable[[Row], Mapping[str, Any] | None] | None = None,
    entity_ids: set[str] | None = None,
) -> Scored:
    """Answer EM and F1 (SQuAD normalisation, best over ``answers``), and the recall of the
    supporting passages over everything the method retrieved for the question: every
    chunk in its trace, mapped to its doc_id through ``doc_of`` (the graph's chunks).

    Gold passages are ``supporting_doc_ids``, or ``supporting`` (title, paragraph) pairs
    mapped by ``passage_ids`` as :mod:`memgraft.eval.musique` maps them. Without
    ``retrieved_chunks`` and ``doc_of`` (no graph folder) recall is not computed.

    With ``trace_of`` (a line's trace) and ``doc_of``: ``answer_recall@5``, the supporting passages among the first
    5 distinct passages of the chunks the answer step was given (a failed question, or one whose answer was given
    none, scores 0). With ``entity_ids`` (the graph's entities) too, over every question's final memory pooled:
    ``vertices_in_graph``, the share of vertices that are graph entities, and ``points_citing``, the share of
    active memory points citing at least one of the graph's chunks (``n_vertices``, ``n_points`` say over how many).
    """
    em, f1, recall, passages, answer_recall = [], [], [], [], []
    grounded = {"vertices": 0, "vertices_in_graph": 0, "points": 0, "points_citing": 0}
    per_q = []
    for row in rows:
        q: dict[str, Any] = {"id": row["id"], "failed": failed(row)}
        answers = row.get("answers")
        if answers:
            pred = row.get("answer") or ""
            q["em"] = musique.exact_match(pred, answers)
            q["f1"] = musique.token_f1(pred, answers)
            em.append(q["em"])
            f1.append(q["f1"])
        gold = _gold_docs(row, passage_ids)
        if retrieved_chunks is not None and doc_of is not None:
            docs = list(dict.fromkeys(doc_of[c] for c in retrieved_chunks(row)))
            q["passages"] = len(docs)
            passages.append(len(docs))
            if gold:
                q["recall"] = musique.recall_at_k(docs, gold, max(1, len(docs)))
                recall.append(q["recall"])
                q["missed"] = [d for d in gold if d not in set(docs)]
        if trace_of is not None and doc_of is not None:
            trace = None if failed(row) else trace_of(row)
            given = answer_chunk_ids(trace) or []
            if gold:
                docs = list(dict.fromkeys(doc_of[c] for c in given))
                q[f"answer_recall@{ANSWER_K}"] = musique.recall_at_k(docs, gold, ANSWER_K)
                answer_recall.append(q[f"answer_recall@{ANSWER_K}"])
            if entity_ids is not None:
                g = memory_grounding(trace, entity_ids, set(doc_of))
                q.update({f"memory_{k}": v for k, v in g.items()})
                for k, v in g.items():
                    grounded[k] += v
        per_q.append(q)
    metrics = {"em": mean(em), "f1": mean(f1), "n_em": len(em)}
    if retrieved_chunks is not None and doc_of is not None:
        metrics.update({"recall": mean(recall), "n_recall": len(recall), "passages/q": mean(passages)})
    if trace_of is not None and doc_of is not None:
        metrics.update({f"answer_recall@{ANSWER_K}": mean(answer_recall), f"n_answer_recall@{ANSWER_K}": len(answer_recall)})
        if entity_ids is not None and grounded["vertices"] + grounded["points"]:
            metrics.update({"vertices_in_graph": _share(grounded["vertices_in_graph"], grounded["vertices"]),
                            "n_vertices": grounded["vertices"],
                            "points_citing": _share(grounded["points_citing"], grounded["points"]),
                            "n_points": grounded["points"]})
    return metrics, per_q


def _gold_docs(row: Mapping[str, Any], passage_ids: musique.PassageIds | None) -> list[str]:
    if row.get("supporting_doc_ids"):
        return list(row["supporting_doc_ids"])
    if row.get("supporting") and passage_ids is not None:
        return list(dict.fromkeys(passage_ids(t, p) for t, p in row["supporting"]))
    return []


# -- NarrativeQA -----------------------------------------------------------------------------


def score_narrativeqa(rows: Sequence[Row], judge: Judge) -> Scored:
    """Accuracy by the correctness judge against the reference ``answers``."""
    ask = [r for r in rows if not failed(r) and r.get("answers")]
    judged = dict(zip((r["id"] for r in ask), judge.correctness(
        [(r["question"], list(r["answers"]), r["answer"]) for r in ask])))
    correct, per_q, judge_failures = [], [], 0
    for row in rows:
        q: dict[str, Any] = {"id": row["id"], "failed": failed(row)}
        if failed(row):
            q.update(correct=False, reason="the system gave no answer")
        elif not row.get("answers"):
            q["skipped"] = "no reference answers"
        elif judged[row["id"]].ok:
            v = judged[row["id"]].value
            q.update(correct=v.correct, reason=v.reason)
        else:
            q["judge_error"] = judged[row["id"]].error
            judge_failures += 1
        if "correct" in q:
            correct.append(float(q["correct"]))
        per_q.append(q)
    return {"accuracy": mean(correct), "n_accuracy": len(correct), "judge_failures": judge_failures}, per_q


# -- NoCha -----------------------------------------------------------------------------------


def _label(value: Any) -> bool:
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def pair_of(row: Mapping[str, Any]) -> str:
    return str(row.get("pair_id") or str(row["id"]).rsplit("/", 1)[0])


def pair_accuracy(claim_correct: Mapping[str, bool | None], pairs: Mapping[str, Sequence[str]]) -> tuple[float, int, int]:
    """NoCha's metric: a pair counts only when both of its claims were judged right.

    ``claim_correct`` maps a question id to right (True), wrong (False) or not judged
    (None: a judge failure); ``pairs`` maps a pair to its question ids. A pair with a
    claim missing from ``claim_correct`` (never answered) or with fewer than two claims
    counts as wrong; a pair with a judge failure and no wrong claim is left out.
    Returns (accuracy, pairs counted, pairs left out).
    """
    scores, left_out = [], 0
    for ids in pairs.values():
        marks = [claim_correct.get(i, False) for i in ids]
        if len(ids) < 2 or any(m is False for m in marks):
            scores.append(0.0)
        elif any(m is None for m in marks):
            left_out += 1
        else:
            scores.append(1.0)
    return mean(scores), len(scores), left_out


def claim_verdicts(rows: Sequence[Row], judge: Judge) -> tuple[list[dict[str, Any]], int]:
    """Per row: the verdict its reply reaches on its claim (read, or judged) against its ``label``, with
    ``correct`` (``unclear`` is wrong), or ``judge_error`` where the judge failed; and how many failed."""
    judged = judge.claims([(r.get("claim") or r["question"], None if failed(r) else r["answer"]) for r in rows])
    per_q, judge_failures = [], 0
    for row, j in zip(rows, judged):
        label = _label(row.get("label"))
        q: dict[str, Any] = {"id": row["id"], "failed": failed(row), "label": label, "verdict": j.verdict,
                             "verdict_from": j.source}
        if j.verdict is None:
            q["judge_error"] = j.error
            judge_failures += 1
        else:
            q["correct"] = j.verdict == ("true" if label else "false")
            if j.reason:
                q["reason"] = j.reason
        per_q.append(q)
    return per_q, judge_failures


def score_nocha(rows: Sequence[Row], judge: Judge) -> Scored:
    """Per claim: the verdict the reply reaches (read, or judged) against its ``label``;
    per pair: right only when both claims are. ``unclear`` counts as wrong."""
    per_q, judge_failures = claim_verdicts(rows, judge)
    claim_correct: dict[str, bool | None] = {q["id"]: q.get("correct") for q in per_q}
    pairs: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        pairs[pair_of(row)].append(row["id"])
    claims = [float(c) for c in claim_correct.values() if c is not None]
    acc, counted, left_out = pair_accuracy(claim_correct, pairs)
    return {"pair_accuracy": acc, "n_pairs": counted, "claim_accuracy": mean(claims), "n_claims": len(claims),
            "pairs_left_out": left_out, "judge_failures": judge_failures}, per_q


# -- PRELUDE ---------------------------------------------------------------------------------------


def _f1(pairs: Sequence[tuple[bool, bool | None]], cls: bool) -> float:
    """F1 of one class over (gold, predicted) pairs; an unclear verdict (None) predicts neither class."""
    tp = sum(g == cls and p == cls for g, p in pairs)
    fp = sum(g != cls and p == cls for g, p in pairs)
    fn = sum(g == cls and p != cls for g, p in pairs)
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")


def score_prelude(rows: Sequence[Row], judge: Judge) -> Scored:
    """Per prequel: the verdict the reply reaches on "consistent with the book?" against its ``label``.
    Accuracy, and the macro F1 of the two classes (consistent, contradict): the dataset is not balanced,
    so always answering one way scores a high accuracy and a low macro F1. ``unclear`` is wrong."""
    per_q, judge_failures = claim_verdicts(rows, judge)
    pairs = [(q["label"], {"true": True, "false": False}.get(q["verdict"])) for q in per_q if "correct" in q]
    f1s = [f for f in (_f1(pairs, True), _f1(pairs, False)) if not math.isnan(f)]
    return {"accuracy": mean([float(g == p) for g, p in pairs]), "macro_f1": mean(f1s), "n_accuracy": len(pairs),
            "judge_failures": judge_failures}, per_q


# -- LongBench-style generative questions ----------------------------------------------------------

CRITERIA = ("comprehensiveness", "diversity")


def score_longbench(rows: Sequence[Row], judge: Judge, baseline: Sequence[Row] | None = None) -> Scored:
    """A 1-10 rating on comprehensiveness and on diversity per answer (a failed answer is
    rated 1 without a call) and, given ``baseline`` lines (another method's answers to the
    same questions), the share of pairwise comparisons won against them (``<criterion>_win``:
    both orders asked, a tie or a split is half a win, 0.5 overall is parity)."""
    ask = [r for r in rows if not failed(r)]
    base = {r["id"]: r for r in baseline} if baseline is not None else None
    per_q = {r["id"]: {"id": r["id"], "failed": failed(r)} for r in rows}
    metrics: dict[str, Any] = {}
    judge_failures = 0
    for criterion in CRITERIA:
        ratings = dict(zip((r["id"] for r in ask), judge.rate(criterion, [(r["question"], r["answer"]) for r in ask])))
        scores = []
        for row in rows:
            q = per_q[row["id"]]
            if failed(row):
                q[criterion] = 1
            elif ratings[row["id"]].ok:
                q[criterion] = ratings[row["id"]].value.score
                q[f"{criterion}_reason"] = ratings[row["id"]].value.reason
            else:
                q[f"{criterion}_judge_error"] = ratings[row["id"]].error
                judge_failures += 1
                continue
            scores.append(float(q[criterion]))
        metrics[criterion] = mean(scores)
        metrics[f"n_{criterion}"] = len(scores)
        if base is None:
            continue
        paired = [(r, base[r["id"]]) for r in rows if r["id"] in base]
        both = [(r, b) for r, b in paired if not failed(r) and not failed(b)]
        compared = dict(zip((r["id"] for r, _ in both), judge.compare(
            criterion, [(r["question"], r["answer"], b["answer"]) for r, b in both])))
        wins = []
        for row, b in paired:
            q = per_q[row["id"]]
            if row["id"] in compared:
                c = compared[row["id"]]
                if c.score is None:
                    q[f"{criterion}_win_judge_error"] = c.error
                    judge_failures += 1
                    continue
                q[f"{criterion}_win"] = c.score
            else:  # one side or both failed: an answer beats none, two failures tie
                q[f"{criterion}_win"] = 0.5 if failed(row) == failed(b) else (0.0 if failed(row) else 1.0)
            wins.append(q[f"{criterion}_win"])
        metrics[f"{criterion}_win"] = mean(wins)
        metrics[f"n_{criterion}_win"] = len(wins)
    metrics["judge_failures"] = judge_failures
    return metrics, list(per_q.values())


def finite(value: Any) -> Any:
    """NaN -> None, for JSON."""
    return None if isinstance(value, float) and math.isnan(value) else value
