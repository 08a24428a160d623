"""The updater runs' data: one split and one held-out evaluation set, the same for SFT and GRPO.

Both entry points rebuild it from the settings (seeded), so GRPO never trains on a team
the SFT evaluation held out, and all three evaluations (before, after SFT, after GRPO)
score the same instances.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from memgraft.collab.data import Row
from memgraft.collab.train.training_data import balanced, load_decisions, split_by_source
from memgraft.config import Settings


@dataclass
class UpdaterData:
    train: list[Row]  # every training decision (training teams/pages only)
    heldout: list[Row]  # every held-out decision
    eval_rows: list[Row]  # the scored sample of the held-out decisions, balanced over relations

    def summary(self) -> dict[str, Any]:
        return {"train_decisions": len(self.train), "heldout_decisions": len(self.heldout),
                "train_sources": len({r["team"] for r in self.train}),
                "heldout_sources": len({r["team"] for r in self.heldout}),
                "eval_instances": len(self.eval_rows),
                "eval_relations": dict(Counter(r["relation"] for r in self.eval_rows))}


def updater_data(settings: Settings) -> UpdaterData:
    t = settings.training
    train, heldout = split_by_source(load_decisions(t), t.heldout_fraction, t.seed)
    overlap = {r["team"] for r in train} & {r["team"] for r in heldout}
    assert not overlap, f"sources on both sides of the split: {sorted(overlap)}"
    return UpdaterData(train, heldout, balanced(heldout, t.eval_instances, t.seed))
