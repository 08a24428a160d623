"""Training the pair judge's second opinion (memgraft.collab.maintain.pair_encoder) in Ray Train.

Called by ``training/updater_judge.py`` (``make train-updater``) after the judge itself.
A sample of the judge's training pairs (:func:`memgraft.collab.maintain.pair_encoder.training_sample`,
half generated, half real) is read once, in ``ROUNDS`` rounds of one learning-rate schedule;
the adapters, head and optimizer are checkpointed after each round, so a killed run resumes
at the next round (one pass takes about ten minutes on 2 cores).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Sequence

from memgraft.config import Settings
from memgraft.progress import Progress
from training.common import fit

RUN_NAME = "updater-pair-encoder"
ENCODER_FILE = "pair-encoder.pt"
STATE_FILE = "state.pt"
SAMPLE, ROUNDS, LR, RANK = 8000, 4, 5e-4, 16


def encoder_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: the rounds it has not done yet, a checkpoint after each."""
    import ray.train
    import torch

    from memgraft.collab.maintain.pair_encoder import EncoderConfig, PairEncoder, save_pair_encoder, train_pair_encoder
    from training.common import worker_threads

    settings = Settings.model_validate(config["settings"])
    worker_threads(settings.training)
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    pairs, rounds = config["pairs"][rank::world], config["rounds"]
    torch.manual_seed(settings.training.seed)
    model = PairEncoder(EncoderConfig(embedder=config["embedder"], rank=config["rank"]))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR, weight_decay=0.01)
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            state = torch.load(Path(d) / STATE_FILE, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"], strict=False)
        opt.load_state_dict(state["optimizer"])
        start = int(state["round"])
    with Progress("train the pair encoder", rounds - start, "rounds", enabled=rank == 0) as bar:
        for r in range(start, rounds):
            lr, lr_end = LR * (1 - r / rounds), LR * (1 - (r + 1) / rounds)
            loss, opt = train_pair_encoder(model, pairs[r::rounds], lr=lr, lr_end=lr_end, warmup=0.4 if r == 0 else 0.0,
                                           seed=settings.training.seed * 100_003 + r, optimizer=opt)
            with tempfile.TemporaryDirectory() as tmp:
                if rank == 0:
                    torch.save({"model": model.trainable_state(), "optimizer": opt.state_dict(), "round": r + 1},
                               Path(tmp) / STATE_FILE)
                    save_pair_encoder(model, Path(tmp) / ENCODER_FILE)
                ray.train.report({"round": r + 1, "loss": loss, "resumed_from_round": start},
                                 checkpoint=ray.train.Checkpoint.from_directory(tmp) if rank == 0 else None)
            bar.advance()


def run_encoder(settings: Settings, pairs: Sequence[Any], storage: str, *, resume: bool = True,
                sample: int = SAMPLE, rounds: int = ROUNDS, rank: int = RANK) -> tuple[Any, dict[str, Any]]:
    """Train on a sample of ``pairs`` (``judge_data.Pair``, both orders); the trained encoder and the run's metrics."""
    from memgraft.collab.maintain.pair_encoder import load_trainable_pair_encoder, training_sample

    chosen = training_sample(pairs, sample, seed=settings.training.seed)
    result = fit(encoder_loop, {"settings": settings.model_dump(), "pairs": chosen, "rounds": rounds, "rank": rank,
                                "embedder": settings.models.embedder}, settings, storage, RUN_NAME, resume)
    if result.checkpoint is None:
        raise RuntimeError(f"the pair encoder run under {storage}/{RUN_NAME} reported no checkpoint")
    with result.checkpoint.as_directory() as d:
        model = load_trainable_pair_encoder(Path(d) / ENCODER_FILE)
    return model, {"pairs": len(chosen), **(result.metrics or {})}
