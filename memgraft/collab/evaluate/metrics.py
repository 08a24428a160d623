"""HiCoMER's metrics (DESIGN.md, HiCoMER): updater, retrieval and answer quality.

Every function is pure and takes plain ids, labels and strings, so the benchmark, the
training code and the tests call them the same way. The paper names the metrics but not
every edge case; each function's docstring states the choice made here, so two runs of
different methods are always scored by the same rule.

* Updater: :func:`conflict_f1` (contradiction as the positive class, plus macro-F1 over
  the three relations) and :func:`maintenance_accuracy`.
* Retrieval, per question: :func:`orr_at_k` (outdated share of the top k, lower is
  better), :func:`crr_at_k` (recall of the valid team memories in the top k),
  :func:`ndcg_at_k` (binary relevance: the gold valid memories). :func:`mean_defined`
  averages per-question values over the questions where a value is defined.
* Answers: :func:`rouge_l` (LCS F-measure over tokens) and :func:`decision_f1`
  (SQuAD token F1).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Collection, Hashable, Iterable, Mapping, Sequence

RELATIONS: tuple[str, ...] = ("compatible", "neutral", "contradiction")
POSITIVE_RELATION = "contradiction"


# -- updater ---------------------------------------------------------------------------------


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall, F1; a zero denominator gives 0.0 (scikit-learn's zero_division=0)."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def conflict_f1(
    predicted: Mapping[Hashable, str], gold: Mapping[Hashable, str]
) -> dict[str, float | int]:
    """Conflict detection of the updater, over the gold target memories.

    ``gold`` and ``predicted`` map a target (a memory id, or a ``(group_id, memory_id)``
    pair when one memory is judged more than once) to its relation label. Only gold
    targets count: a prediction for a target without a gold label is ignored, and a gold
    target without a prediction counts as "not contradiction" (a missed conflict), so a
    method cannot gain by skipping targets.

    Returns ``precision``, ``recall`` and ``f1`` of predicted "contradiction" against gold
    "contradiction"; ``macro_f1``, the mean per-relation F1 over the relations that occur
    in the gold or predicted labels (scikit-learn's default label set; a missing
    prediction is its own wrong label); and ``n``, the number of gold targets.
    """
    tp = fp = fn = 0
    pairs: list[tuple[str | None, str]] = []
    for target, gold_rel in gold.items():
        pred_rel = predicted.get(target)
        pairs.append((pred_rel, gold_rel))
        is_pred, is_gold = pred_rel == POSITIVE_RELATION, gold_rel == POSITIVE_RELATION
        tp += is_pred and is_gold
        fp += is_pred and not is_gold
        fn += is_gold and not is_pred
    precision, recall, f1 = _prf(tp, fp, fn)
    present = [r for r in RELATIONS if any(r in pair for pair in pairs)]
    per_class = []
    for rel in present:
        c_tp = sum(p == rel and g == rel for p, g in pairs)
        c_fp = sum(p == rel and g != rel for p, g in pairs)
        c_fn = sum(g == rel and p != rel for p, g in pairs)
        per_class.append(_prf(c_tp, c_fp, c_fn)[2])
    macro = sum(per_class) / len(per_class) if per_class else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "macro_f1": macro, "n": len(gold)}


def maintenance_correct(predicted: Mapping[str, object] | None, gold: Mapping[str, object]) -> bool:
    """Whether one maintenance decision is right.

    A decision is a mapping with ``relation`` (compatible, neutral, contradiction),
    ``action`` ("keep" or "revise") and ``valid`` (the memory's validity flag after the
    decision). It is right when the relation **and** the action match the gold ones (the
    paper's exact match; a gold decision without a relation checks the action alone) and,
    when the gold action is "revise", the predicted validity also equals the gold validity:
    a revision that rewrites the text but leaves an outdated memory marked valid is wrong.
    For "keep" the validity is not checked (keeping leaves the memory's state as it was).
    A missing prediction (None) is wrong.
    """
    if predicted is None or predicted.get("action") != gold.get("action"):
        return False
    if "relation" in gold and predicted.get("relation") != gold["relation"]:
        return False
    if gold.get("action") == "revise":
        return bool(predicted.get("valid")) == bool(gold.get("valid"))
    return True


def maintenance_accuracy(
    predicted: Mapping[Hashable, Mapping[str, object]],
    gold: Mapping[Hashable, Mapping[str, object]],
    unjudged: Mapping[str, object] | None = None,
) -> float:
    """Share of gold maintenance decisions the updater got right (:func:`maintenance_correct`).

    Both map a target to its decision; predictions for other targets are ignored. A gold
    target without a prediction is wrong, unless ``unjudged`` says what leaving it alone
    amounts to: a bank's updater that never retrieved a memory kept it as it was, i.e.
    neutral/keep, which is right exactly where the gold says neutral/keep. 0.0 when there
    is no gold decision.
    """
    if not gold:
        return 0.0
    right = sum(maintenance_correct(predicted.get(t, unjudged), g) for t, g in gold.items())
    return right / len(gold)


# -- retrieval -------------------------------------------------------------------------------


def orr_at_k(retrieved: Sequence[str], outdated: Collection[str], k: int = 5) -> float:
    """Outdated Retrieval Rate: the share of the top-k retrieved memories that are outdated.

    The share is over the memories actually returned in the top k (``min(k, len)``), so a
    method that returns fewer memories is not rewarded for the empty slots; an empty
    retrieval scores 0.0. ``outdated`` is the question's gold outdated ids (or, for a
    stricter count, every memory outdated as of the question's time). Lower is better.
    """
    top = list(retrieved)[:k]
    if not top:
        return 0.0
    bad = set(outdated)
    return sum(m in bad for m in top) / len(top)


def crr_at_k(retrieved: Sequence[str], valid_team: Collection[str], k: int = 5) -> float | None:
    """Current-team Recall Rate: of the question's gold valid *team* memories, the fraction
    found in the top k. The caller passes only the team memories among the gold valid ids.
    None when the question has no valid team memory (the recall is undefined there; leave
    it out of the mean rather than count it as 0 or 1).
    """
    gold = set(valid_team)
    if not gold:
        return None
    return len(gold.intersection(list(retrieved)[:k])) / len(gold)


def ndcg_at_k(retrieved: Sequence[str], relevant: Collection[str], k: int = 10) -> float | None:
    """NDCG@k with binary relevance (1 for a gold valid memory, else 0).

    DCG = sum over ranks i = 1..k of rel_i / log2(i + 1); the ideal DCG puts
    ``min(k, |relevant|)`` relevant memories first. A memory retrieved twice counts once
    (at its first rank). None when the question has no relevant memory.
    """
    gold = set(relevant)
    if not gold:
        return None
    seen: set[str] = set()
    dcg = 0.0
    for rank, memory in enumerate(list(retrieved)[:k], start=1):
        if memory in gold and memory not in seen:
            dcg += 1.0 / math.log2(rank + 1)
        seen.add(memory)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(gold)) + 1))
    return dcg / ideal


def precision_at_1(retrieved: Sequence[str], valid: Collection[str]) -> float | None:
    """1.0 when the top hit is one of the question's gold valid memories (the record that holds
    at the asked time), else 0.0; None when the question has no valid memory."""
    gold = set(valid)
    if not gold:
        return None
    top = list(retrieved)[:1]
    return float(bool(top) and top[0] in gold)


def validity_scores(flagged_valid: Mapping[str, bool], gold_valid: Mapping[str, bool]) -> dict[str, float | int]:
    """A bank's validity flags against the gold state, over the gold memories.

    ``precision``: of the memories the bank keeps valid, the share gold says are valid
    (a stale memory left valid lowers it); ``recall``: of the gold valid memories, the
    share the bank keeps valid (a current record wrongly outdated lowers it). A memory the
    bank lacks counts as not valid.
    """
    tp = sum(1 for m, g in gold_valid.items() if g and flagged_valid.get(m, False))
    fp = sum(1 for m, g in gold_valid.items() if not g and flagged_valid.get(m, False))
    fn = sum(1 for m, g in gold_valid.items() if g and not flagged_valid.get(m, False))
    precision, recall, f1 = _prf(tp, fp, fn)
    return {"precision": precision, "recall": recall, "f1": f1, "stale_left_valid": fp, "valid_outdated": fn,
            "memories": len(gold_valid)}


def mean_defined(values: Iterable[float | None]) -> tuple[float, int]:
    """Mean of the defined values and how many there were; (nan, 0) when none is defined."""
    kept = [v for v in values if v is not None]
    return (sum(kept) / len(kept), len(kept)) if kept else (float("nan"), 0)


# -- answers ---------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def rouge_tokens(text: str) -> list[str]:
    """ROUGE's tokens: lower-cased runs of letters and digits (as the rouge-score package
    tokenises, but keeping non-ASCII letters); no stemming, no stop-word removal."""
    return _WORD.findall(text.lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, in O(len(a)·len(b)) time, O(len(b)) memory."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, reference: str, beta: float = 1.0) -> float:
    """ROUGE-L F-measure: LCS-based recall R = LCS/|ref| and precision P = LCS/|pred|,
    F = (1 + β²)·P·R / (R + β²·P). β = 1 (the F1 that rouge-score reports) by default.
    0.0 when either side has no tokens (1.0 if both are empty)."""
    pred, ref = rouge_tokens(prediction), rouge_tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    lcs = lcs_length(pred, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(pred), lcs / len(ref)
    return (1 + beta**2) * precision * recall / (recall + beta**2 * precision)


_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, punctuation and articles removed, spaces collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def decision_f1(prediction: str, gold: str | Iterable[str]) -> float:
    """Token-level F1 between the predicted and gold decision (or answer), after SQuAD
    normalisation; with several gold answers, the best. An empty side scores 1.0 only
    against another empty one (SQuAD v2's rule)."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    pred = normalize_answer(prediction).split()
    best = 0.0
    for answer in golds:
        ref = normalize_answer(answer).split()
        if not pred or not ref:
            best = max(best, float(pred == ref))
            continue
        same = sum((Counter(pred) & Counter(ref)).values())
        if same:
            p, r = same / len(pred), same / len(ref)
            best = max(best, 2 * p * r / (p + r))
    return best
