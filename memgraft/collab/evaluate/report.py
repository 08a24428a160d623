"""The tables ``python -m memgraft.eval collab`` prints from an :class:`~memgraft.collab.evaluate.harness.EvalReport`.

Apart from the harness so that scoring and showing stay two ideas: updaters against the gold
decisions, each bank's validity flags, methods x metrics, and the now / as-of split.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memgraft.collab.evaluate.methods import METHODS

if TYPE_CHECKING:
    from memgraft.collab.evaluate.harness import EvalReport


def print_report(report: "EvalReport", title: str, k: int = 10) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    if not con.is_terminal:  # piped or captured: do not squeeze the tables into 80 columns
        con = Console(width=max(con.width, 160))
    if report.updaters:
        t = Table(title=f"{title}: updaters against the gold decisions")
        for col in ("updater", "Conflict F1", "macro F1", "Maintenance Acc.", "decided / gold",
                    "H_t missed (inter)", "H_t missed (revise)", "seconds"):
            t.add_column(col, justify="left" if col == "updater" else "right")

        def missed(s: dict, key: str, of: str) -> str:
            return f"{s[key + '_n']}/{s[of]} ({s[key]:.3f})" if key in s else "-"

        for name, s in report.updaters.items():
            t.add_row(name, f"{s['conflict_f1']:.3f}", f"{s['conflict_macro_f1']:.3f}",
                      f"{s['maintenance_accuracy']:.3f}", f"{s['decided']}/{s['gold_decisions']}",
                      missed(s, "ht_missed", "inter_targets"), missed(s, "ht_missed_revise", "inter_revise_targets"),
                      f"{s['seconds']:.1f}")
        con.print(t)
    if report.validity:
        t = Table(title=f"{title}: each bank's validity flags against the gold state")
        for col in ("bank", "precision", "recall", "wrongly retired / current", "by another subject's group",
                    "left valid / outdated", "memories"):
            t.add_column(col, justify="left" if col == "bank" else "right")
        for name, v in report.validity.items():
            wrong = f"{v['wrongly_retired']}/{v['current']}" if "current" in v else str(v["valid_outdated"])
            left = f"{v['left_valid']}/{v['outdated']}" if "outdated" in v else str(v["stale_left_valid"])
            t.add_row(name, f"{v['precision']:.3f}", f"{v['recall']:.3f}", wrong,
                      str(v.get("retired_by_other_subject", "-")), left, str(v["memories"]))
        con.print(t)
    t = Table(title=f"{title}: methods x metrics (test teams' questions; each method's own ranking; ORR lower is better)")
    cols = ("ORR@5", "CRR@5", f"NDCG@{k}", "P@1", "ROUGE-L", "Decision F1", "dropped/q", "questions", "ms/q")
    t.add_column("method")
    t.add_column("updater / ranking")
    for col in cols:
        t.add_column(col, justify="right")

    def cell(s: dict, key: str) -> str:
        v = s.get(key)
        return "-" if v is None or v != v else f"{v:.3f}"

    def decision_cell(s: dict) -> str:
        """Decision F1 is defined on the decision-oriented query types; data without types has none."""
        return cell(s, "decision_f1") if s.get("n_decision_f1") else ("n/a" if s.get("n_rouge_l") else "-")

    for name, s in report.methods.items():
        answers = f" (n={s['n_rouge_l']})" if s.get("n_rouge_l") else ""
        spec = METHODS.get(name)
        t.add_row(spec.label if spec and spec.label else name, f"{s.get('updater', '?')} / {s.get('ranking', '?')}", cell(s, "orr@5"), cell(s, "crr@5"), cell(s, f"ndcg@{k}"), cell(s, "p@1"),
                  cell(s, "rouge_l") + answers, decision_cell(s), f"{s['dropped/q']:.2f}",
                  str(int(s["questions"])), f"{s['ms/q']:.1f}")
    con.print(t)
    ranked = ("orr@5", "crr@5", f"ndcg@{k}", "p@1")

    def groups_table(field: str, heading: str, extra=None) -> None:
        """One column per group of ``field`` (``by_asked``, ``by_qtype``): each method's ranked metrics there."""
        groups = sorted({g for s in report.methods.values() for g in s.get(field, {})})
        if not groups:
            return
        t = Table(title=f"{title}: {heading}")
        t.add_column("method")
        for g in groups:
            t.add_column(g, justify="right")
        for name, s in report.methods.items():
            by = s.get(field, {})
            t.add_row(name, *(" / ".join(cell(by.get(g, {}), key) for key in ranked)
                              + (extra(by.get(g, {})) if extra else "") for g in groups))
        con.print(t)

    groups_table("by_asked", f"by when the question is asked (ORR@5 / CRR@5 / NDCG@{k} / P@1)")
    groups_table("by_qtype", f"by query type (ORR@5 / CRR@5 / NDCG@{k} / P@1; Decision F1 on the decision types)",
                 extra=lambda g: f" · {cell(g, 'decision_f1')}" if g.get("n_decision_f1") else "")
    info = report.info
    con.print(f"HiCoMER updater: {info.get('updater')}; S_sem: {info.get('reranker')}; "
              f"teams train/test {info.get('train_teams')}/{info.get('test_teams')}"
              + (" (no held-out team: the scorer trained on the scored teams' own questions)" if info.get("same_teams") else "")
              + "; scorer training: " + ", ".join(f"{b}: {s['pairs']} pairs, loss {s['first_loss']:.3f} -> "
                                                  f"{s['last_loss']:.3f}" for b, s in report.scorer_training.items()
                                                  if s.get("first_loss") is not None))
