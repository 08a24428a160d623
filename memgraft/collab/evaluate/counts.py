"""Counts beside the updater's and the validity flags' rates: what was missed, and who retired what.

Why: Maintenance Accuracy and validity precision/recall are shares; the errors that matter
most are few and must be seen as counts. A gold target the updater never retrieved into H_t
has no decision: where the gold says revise it is a miss, whatever leaving it alone would
amount to, and how often H_t missed a gold target at all says whether the retrieval or the
judge is to blame. A current memory wrongly retired is the worst error the system can make;
counting the ones retired by a group that holds no record of the memory's own subject shows
the cross-subject kind apart. Pure functions over ids and rows, like :mod:`.metrics`.
"""

from __future__ import annotations

from typing import Collection, Hashable, Mapping, Sequence

from memgraft.collab.data import Row


def ht_missed(decided: Collection[Hashable], gold: Sequence[Row]) -> dict[str, float | int]:
    """Of the gold **inter** targets (an earlier memory judged against a group), the share with no decision at
    all (``ht_missed``: H_t never held it), and of those whose gold action is revise, the share with none
    (``ht_missed_revise``). ``decided``: the ``(group_id, memory_id)`` keys the updater decided."""
    inter = [g for g in gold if g.get("level") == "inter"]
    revise = [g for g in inter if g.get("action") == "revise"]
    miss = sum((g["group_id"], g["memory_id"]) not in decided for g in inter)
    miss_revise = sum((g["group_id"], g["memory_id"]) not in decided for g in revise)
    return {"ht_missed": miss / len(inter) if inter else 0.0, "ht_missed_n": miss, "inter_targets": len(inter),
            "ht_missed_revise": miss_revise / len(revise) if revise else 0.0, "ht_missed_revise_n": miss_revise,
            "inter_revise_targets": len(revise)}


def validity_counts(flagged_valid: Mapping[str, bool], memories: Sequence[Row],
                    retired_in: Mapping[str, str] | None = None) -> dict[str, int]:  # fmt: skip
    """``wrongly_retired`` of ``current`` (gold-valid at the end, flagged invalid) and ``left_valid`` of
    ``outdated`` (gold-outdated, still flagged valid). With ``retired_in`` (memory id -> the group whose decision
    retired it), ``retired_by_other_subject``: the wrongly retired ones whose retiring group holds no memory
    about their own subject (``subject``, else ``topic``) in their team."""
    current = [m for m in memories if m.get("outdated_at") is None]
    outdated = [m for m in memories if m.get("outdated_at") is not None]
    wrong = [m for m in current if not flagged_valid.get(m["memory_id"], False)]
    out = {"wrongly_retired": len(wrong), "current": len(current),
           "left_valid": sum(flagged_valid.get(m["memory_id"], False) for m in outdated), "outdated": len(outdated)}
    if retired_in is not None:
        subjects: dict[tuple[str, str], set] = {}
        for m in memories:
            subjects.setdefault((m["team"], m["group_id"]), set()).add(m.get("subject") or m.get("topic"))
        out["retired_by_other_subject"] = sum(
            m["memory_id"] in retired_in
            and (m.get("subject") or m.get("topic")) not in subjects.get((m["team"], retired_in[m["memory_id"]]), set())
            for m in wrong)
    return out
