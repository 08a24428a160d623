"""SFT throughput inside Ray Train against the same TRL loop run plainly, in one run.

    python bench/train_sft.py [--steps 6] [--warmup 1] [--repeats 1] [--profile local] [--set k=v ...] [--out DIR]

Both sides build the very trainer ``training/updater_sft.py`` trains with
(:func:`training.updater_sft.sft_trainer`: the bundled SmolLM2 or ``training.base_model``,
the top ``training.trainable_layers`` blocks trained, the same records in the same order),
with checkpointing off (``save_steps=0``) so only the training loop is timed:

* **plain**: ``trainer.train()`` in this process, torch threads = ``training.cpus_per_worker``;
* **Ray Train**: a ``TorchTrainer`` with one worker of ``training.cpus_per_worker`` CPUs,
  the trainer passed through ``prepare_trainer`` (DDP over a one-process gloo group, as
  HF does whenever torch.distributed is up), the figures reported back with ``ray.train.report``.

Tokens per second = (tokens after the last step - tokens after the warm-up steps) / the
seconds between them, from TRL's running ``num_tokens`` log; start-up (Ray, the worker
group, model loading, tokenising) is outside the window and reported apart. The ratio
is Ray Train / plain (1.0: no overhead). Runs alternate plain, Ray, plain, Ray... and
the ratio is of the medians. CPU used by other processes during each run is printed
beside it: on a shared machine the figures are only as quiet as the machine. Figures
are printed and written to ``<out>/bench_train_sft.json``. The default run (6 steps of
2 SmolLM2 prompts of ~450 tokens per side) takes 3-6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sampling import ProcessSampler  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from transformers import TrainerCallback

from memgraft.config import Settings, load_settings


class TokenClock(TrainerCallback):
    """(seconds, cumulative tokens) at every logged step; logging_steps is 1 in every run."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, float]] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "num_tokens" in logs:
            self.marks.append((time.perf_counter(), float(logs["num_tokens"])))


def throughput(marks: list[tuple[float, float]], warmup: int) -> dict[str, float]:
    """Tokens per second from the end of the ``warmup``-th step (at least the first) to the last."""
    start = max(1, warmup) - 1
    if len(marks) < start + 2:
        raise ValueError(f"{len(marks)} logged steps: need at least {start + 2} for {warmup} warm-up steps")
    (t0, n0), (t1, n1) = marks[start], marks[-1]
    return {"steps_timed": len(marks) - 1 - start, "tokens": n1 - n0, "seconds": t1 - t0,
            "tokens_per_s": (n1 - n0) / (t1 - t0)}


def run_plain(settings: Settings, model: str, records: list[dict[str, Any]], steps: int, warmup: int) -> dict:
    from memgraft.models.threads import set_torch_threads
    from training.updater_sft import sft_trainer

    set_torch_threads(int(settings.training.cpus_per_worker))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = sft_trainer(settings, model, records, Path(tmp), max_steps=steps, save_steps=0)
        clock = TokenClock()
        trainer.add_callback(clock)
        ready = time.perf_counter()
        trainer.train()
    return {**throughput(clock.marks, warmup), "startup_s": ready - started}


def bench_loop(config: dict[str, Any]) -> None:
    """A Ray Train worker: the same trainer, timed the same way, reported back."""
    import ray.train
    from ray.train.huggingface.transformers import prepare_trainer

    from training.common import worker_threads
    from training.updater_sft import sft_trainer

    settings = Settings.model_validate(config["settings"])
    worker_threads(settings.training)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = sft_trainer(settings, config["model"], config["records"], Path(tmp), max_steps=config["steps"],
                              save_steps=0)
        clock = TokenClock()
        trainer.add_callback(clock)
        trainer = prepare_trainer(trainer)
        ready = time.time()
        trainer.train()
    with tempfile.TemporaryDirectory() as tmp:  # Ray Train 2.60 keeps only metrics reported with a checkpoint
        (Path(tmp) / "done").touch()
        ray.train.report({**throughput(clock.marks, config["warmup"]), "ready_at": ready},
                         checkpoint=ray.train.Checkpoint.from_directory(tmp))


def run_ray(settings: Settings, model: str, records: list[dict[str, Any]], steps: int, warmup: int,
            storage: Path) -> dict:
    from ray.train import RunConfig
    from ray.train.torch import TorchTrainer

    from training.common import scaling_config

    started = time.time()
    trainer = TorchTrainer(bench_loop, train_loop_config={"settings": settings.model_dump(), "model": model,
                                                          "records": records, "steps": steps, "warmup": warmup},
                           scaling_config=scaling_config(settings.training),
                           run_config=RunConfig(name=f"bench-sft-{uuid.uuid4().hex[:8]}", storage_path=str(storage)))
    metrics = dict(trainer.fit().metrics)
    metrics["startup_s"] = metrics.pop("ready_at") - started
    return metrics


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=6, help="optimiser steps per run (warm-up included)")
    p.add_argument("--warmup", type=int, default=1, help="first steps left out of the timing (at least 1)")
    p.add_argument("--repeats", type=int, default=1, help="runs per side, alternating")
    p.add_argument("--profile", default="local")
    p.add_argument("--set", dest="sets", action="append", default=[], help="section.field=value")
    p.add_argument("--out", type=Path, default=Path("out/bench"))
    a = p.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from memgraft.collab.train.training_data import balanced, sft_record
    from training.common import init_ray
    from training.hf_run import base_model
    from training.updater_data import updater_data

    settings = load_settings(a.profile, a.sets)
    t = settings.training
    model = base_model(settings)
    n = a.steps * t.sft_batch_size * t.sft_grad_accum
    records = [sft_record(r) for r in balanced(updater_data(settings).train, n, t.seed)]
    a.out.mkdir(parents=True, exist_ok=True)
    init_ray()
    runs: list[dict[str, Any]] = []
    # CPU of this process and its descendants (the local Ray's workers), sampled while they live,
    # against the whole machine's: what other processes took during each run.
    sampler = ProcessSampler().start()
    with tempfile.TemporaryDirectory() as storage:
        for i in range(a.repeats):
            for side in ("plain", "ray"):
                phase = f"{side} #{i + 1}"
                sampler.set_phase(phase)
                r = (run_plain(settings, model, records, a.steps, a.warmup) if side == "plain"
                     else run_ray(settings, model, records, a.steps, a.warmup, Path(storage)))
                sampler.set_phase("between runs")
                cpu = sampler.cpu[phase]
                runs.append({"side": side, "repeat": i, **r, "wall_s": cpu["wall_s"], "other_cores": cpu["other_cores"]})
    sampler.stop()
    med = {side: statistics.median(r["tokens_per_s"] for r in runs if r["side"] == side) for side in ("plain", "ray")}
    ratio = med["ray"] / med["plain"]

    con = Console()
    if not con.is_terminal:  # piped or captured: do not squeeze the table into 80 columns
        con = Console(width=max(con.width, 140))
    table = Table(title=f"SFT throughput: {Path(model).name}, {a.steps} steps of {t.sft_batch_size} "
                        f"({a.warmup} warm-up), {t.cpus_per_worker:g} CPUs, top {t.trainable_layers or 'all'} layers")
    for col in ("run", "steps timed", "tokens", "seconds", "tokens/s", "start-up s", "other processes (cores)"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in runs:
        table.add_row(f"{'Ray Train' if r['side'] == 'ray' else 'plain TRL'} #{r['repeat'] + 1}",
                      str(r["steps_timed"]), f"{r['tokens']:.0f}", f"{r['seconds']:.1f}",
                      f"{r['tokens_per_s']:.1f}", f"{r['startup_s']:.1f}", f"{r['other_cores']:.2f}")
    con.print(table)
    con.print(f"Ray Train / plain tokens per second (medians): [bold]{ratio:.3f}[/bold] (aim: >= 0.9)")
    noisy = [r for r in runs if r["other_cores"] > 0.2]
    if noisy:
        con.print(f"[bold red]warning: other processes used {max(r['other_cores'] for r in noisy):.2f} cores "
                  f"during {len(noisy)} of {len(runs)} runs; the ratio is only as good as the machine was quiet")
    path = a.out / "bench_train_sft.json"
    path.write_text(json.dumps({"model": model, "steps": a.steps, "warmup": a.warmup, "runs": runs,
                                "median_tokens_per_s": med, "ratio": ratio}, indent=2))
    con.print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
