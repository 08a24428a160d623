"""Training HiCoMER's validity scorer S_val with the pairwise loss, inside Ray Train.

    python training/validity_scorer.py [--profile local|a100|PATH] [--output out/train/validity]
        [--set training.validity_bank=gold --set hicomer.validity_epochs=50 ...] [--no-resume]

Data: a generated stream (``training.validity_teams`` x ``validity_groups``) replayed into a
maintained bank (``training.validity_bank``: ``judge``, the trained updater's states, as the
paper orders it: updater first, then the retriever on what it maintained; ``gold``, the
dataset's own decisions; or ``rules``, the rule-based updater). Its teams are split (``training.heldout_fraction``): the
training teams' questions give the pairs (:func:`memgraft.collab.retrieve.validity.build_pairs`: m+ a
valid gold memory, m- an outdated, conflicting or similar-but-invalid one as the bank held it
then), and the held-out teams' questions are the test.

Each worker trains on its share of the pairs with :func:`memgraft.collab.retrieve.validity.train_step`
(DDP when there are several workers) and reports a checkpoint every epoch; restarted with
the same output it resumes at the next epoch. Prints, on the held-out teams' questions,
ORR@5, CRR@5 and NDCG@10 of the validity-aware retriever without a scorer (S_sem alone),
with the untrained scorer (seeded random weights, the starting point of training) and with
the trained one, and the held-out pair accuracy of both scorers. Writes
``<output>/scorer.pt`` (``python -m memgraft.collab search --scorer``) and the bank it was
scored on, ``<output>/bank-<how>.sqlite``.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import typer

from memgraft.config import Settings
from memgraft.progress import Progress
from training.common import (PROFILE_OPTION, RAY_ADDRESS_OPTION, RESUME_OPTION, SET_OPTION, check_workers_fit, fit,
                             init_ray, load, said_as_exit, storage_path, write_json)

RUN_NAME = "validity-scorer"
STATE_FILE = "state.pt"  # scorer, optimizer and epoch: what a restarted worker resumes from
SCORER_FILE = "scorer.pt"  # the scorer alone, as save_scorer writes it


def validity_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: Adam over its shard of the pairs, one checkpoint per epoch."""
    import ray.train
    import torch
    from ray.train.torch import prepare_model

    from memgraft.collab.retrieve.validity import ValidityPairs, ValidityScorer, batches, save_scorer, train_step
    from training.common import worker_threads

    settings = Settings.model_validate(config["settings"])
    t, h = settings.training, settings.hicomer
    worker_threads(t)
    ctx = ray.train.get_context()
    pairs: ValidityPairs = config["pairs"]
    shard = pairs.subset(list(range(ctx.get_world_rank(), len(pairs), ctx.get_world_size())))
    torch.manual_seed(t.seed)  # the same initial weights on every worker, and as the driver's "untrained" scorer
    scorer = ValidityScorer.from_settings(pairs.h_q.shape[1], h)
    optimizer = torch.optim.Adam(scorer.parameters(), lr=h.validity_lr)
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            state = torch.load(Path(d) / STATE_FILE, map_location="cpu", weights_only=True)
        scorer.load_state_dict(state["scorer"])
        optimizer.load_state_dict(state["optimizer"])
        start = int(state["epoch"])
    model = prepare_model(scorer)  # DDP across workers (gloo on CPUs), the module itself for one worker
    with Progress("train the validity scorer", h.validity_epochs - start, "epochs",
                  enabled=ctx.get_world_rank() == 0) as bar:
        for epoch in range(start, h.validity_epochs):
            torch.manual_seed(t.seed * 100_003 + epoch)  # dropout masks: the same whether or not the run resumed
            shuffle = torch.Generator().manual_seed(t.seed * 100_003 + epoch)
            losses = [(train_step(model, optimizer, b), len(b)) for b in batches(shard, h.validity_batch_size, shuffle)]
            metrics = {"epoch": epoch + 1, "loss": sum(l * n for l, n in losses) / max(1, len(shard)),
                       "resumed_from_epoch": start}
            with tempfile.TemporaryDirectory() as tmp:
                if ctx.get_world_rank() == 0:
                    torch.save({"scorer": scorer.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1},
                               Path(tmp) / STATE_FILE)
                    save_scorer(scorer, Path(tmp) / SCORER_FILE)
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(tmp)
                                 if ctx.get_world_rank() == 0 else None)
            bar.advance()


def retrieval_metrics(bank: Any, embedder: Any, reranker: Any, scorer: Any, settings: Settings,
                      questions: Sequence[Any], team_ids: set[str], k: int = 10) -> dict[str, float]:
    """Mean ORR@5, CRR@5 and NDCG@k of the validity-aware retriever (``scorer`` None: S_sem alone)."""
    from memgraft.collab.evaluate import metrics
    from memgraft.collab.evaluate.harness import retrieval_scores
    from memgraft.collab.retrieve.retriever import ValidityRetriever

    retriever = ValidityRetriever(bank, embedder, reranker, scorer, settings.hicomer)
    rows = []
    for q in questions:
        ids = [hit.memory.memory_id for hit in retriever.search(q.team, q.question, k=k, as_of=q.time)]
        rows.append(retrieval_scores(ids, q, team_ids, k))
    return {key: metrics.mean_defined(r[key] for r in rows)[0] for key in ("orr@5", "crr@5", f"ndcg@{k}")}


def run_validity(settings: Settings, output: str | Path, *, resume: bool = True,
                 ray_address: str | None = None, embedder: Any = None) -> dict[str, Any]:
    """Build the bank and the pairs, score the baselines, train in Ray Train, score the trained scorer
    (``embedder``: a caller's, to share its vectors; else ``models.embedder``)."""
    import torch

    from memgraft.collab.data.generator import generate
    from memgraft.collab.evaluate.harness import build_bank, split_teams
    from memgraft.collab.types import MemoryQuestion
    from memgraft.collab.retrieve.validity import ValidityScorer, build_pairs, load_scorer, pair_accuracy, save_scorer
    from memgraft.models.embedder import load_embedder
    from memgraft.models.reranker import load_reranker

    t, h = settings.training, settings.hicomer
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    init_ray(ray_address)
    check_workers_fit(settings)  # before the bank and the pairs: a run that cannot start is refused at once
    dataset = generate(seed=t.seed, teams=t.validity_teams, groups=t.validity_groups)
    embedder = embedder or load_embedder(settings)
    reranker = load_reranker(settings, embedder)
    bank, bank_info = build_bank(out / f"bank-{t.validity_bank}.sqlite", dataset, embedder, t.validity_bank, settings)
    questions = [MemoryQuestion.model_validate(q) for q in dataset.questions]
    train_teams, test_teams = split_teams(questions, t.heldout_fraction, t.seed)
    train_q = [q for q in questions if q.team in train_teams]
    test_q = [q for q in questions if q.team in test_teams]
    team_ids = {m["memory_id"] for m in dataset.memories if m["type"] == "team"}

    def pairs_of(qs: Sequence[MemoryQuestion]):
        return build_pairs(bank, qs, embedder, negatives_per_positive=h.validity_negatives,
                           neighbours=h.candidate_top_n, seed=t.seed)

    pairs, test_pairs = pairs_of(train_q), pairs_of(test_q)
    if not len(pairs):
        raise ValueError("no training pairs: more teams or groups (training.validity_teams/validity_groups)")
    torch.manual_seed(t.seed)  # the weights every worker starts from
    untrained = ValidityScorer.from_settings(embedder.dim, h).eval()
    report: dict[str, Any] = {
        "data": {"bank": t.validity_bank, "bank_path": str(bank.path), "train_teams": sorted(train_teams),
                 "test_teams": sorted(test_teams), "train_questions": len(train_q), "test_questions": len(test_q),
                 "train_pairs": len(pairs), "test_pairs": len(test_pairs), "bank_seconds": bank_info["seconds"],
                 "same_teams": train_teams == test_teams, "reranker": reranker.name},
        "no scorer": retrieval_metrics(bank, embedder, reranker, None, settings, test_q, team_ids),
        "untrained scorer": {**retrieval_metrics(bank, embedder, reranker, untrained, settings, test_q, team_ids),
                             "pair_accuracy": pair_accuracy(untrained, test_pairs)},
    }
    storage = storage_path(t, out)
    result = fit(validity_loop, {"settings": settings.model_dump(), "pairs": pairs, "run_id": uuid.uuid4().hex},
                 settings, storage, RUN_NAME, resume)
    if result.checkpoint is None:
        raise RuntimeError(f"the validity run under {storage}/{RUN_NAME} reported no checkpoint")
    with result.checkpoint.as_directory() as d:
        scorer = load_scorer(Path(d) / SCORER_FILE)
    path = save_scorer(scorer, out / SCORER_FILE)
    report["train"] = {"storage": storage, "checkpoint": result.checkpoint.path, "scorer": str(path),
                       **(result.metrics or {})}
    report["trained scorer"] = {**retrieval_metrics(bank, embedder, reranker, scorer, settings, test_q, team_ids),
                                "pair_accuracy": pair_accuracy(scorer, test_pairs)}
    bank.close()
    write_json(out / "metrics.json", report)
    return report


def print_report(report: dict[str, Any]) -> None:
    from rich.table import Table

    from training.common import wide_console

    con = wide_console(120)
    d = report["data"]
    table = Table(title=f"validity-aware retrieval on the held-out teams' {d['test_questions']} questions "
                        f"({d['bank']} bank; ORR lower is better)")
    for col in ("S_val", "ORR@5", "CRR@5", "NDCG@10", "pair accuracy"):
        table.add_column(col, justify="left" if col == "S_val" else "right")
    for name in ("no scorer", "untrained scorer", "trained scorer"):
        s = report[name]
        acc = s.get("pair_accuracy")
        table.add_row(name, f"{s['orr@5']:.3f}", f"{s['crr@5']:.3f}", f"{s['ndcg@10']:.3f}",
                      "-" if acc is None else f"{acc:.3f}")
    con.print(table)
    tr = report["train"]
    con.print(f"S_sem: {d['reranker']}; {d['train_pairs']} training pairs from teams {', '.join(d['train_teams'])}; "
              f"held out {', '.join(d['test_teams'])}; epoch {tr.get('epoch')} (resumed from "
              f"{tr.get('resumed_from_epoch', 0)}), last loss {tr.get('loss', float('nan')):.3f}; scorer in {tr['scorer']}")


app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def main(
    output: str = typer.Option("out/train/validity", "--output", help="scorer.pt, the bank, metrics.json, ray/"),
    profile: str = PROFILE_OPTION,
    set_: list[str] = SET_OPTION,
    resume: bool = RESUME_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
) -> None:
    settings = load(profile, set_)
    with said_as_exit("validity_scorer"):
        report = run_validity(settings, output, resume=resume, ray_address=ray_address)
    print_report(report)


if __name__ == "__main__":
    app()
