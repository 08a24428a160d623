"""Supervised fine-tuning of the HiCoMER updater with TRL's SFTTrainer, inside Ray Train.

    python training/updater_sft.py [--profile local|a100|PATH] [--output out/train/updater/sft]
        [--set training.sft_max_steps=32 ...] [--no-resume] [--no-eval]
    ray job submit --working-dir . -- python training/updater_sft.py --config configs/a100.yaml --output /data/sft

Data: gold maintenance decisions of generated teams (and TimeQA pages with
``training.timeqa``/``timeqa_pages``), split by team so no source is in both training and
evaluation. Each record is the exact judge chat the LLM updater sends for that target and,
as the assistant turn, the gold decision as schema JSON; the loss is on the completion only.

Prints Conflict F1 and Maintenance Accuracy on held-out decisions before training and
after; writes ``<output>/model`` (an HF folder: ``--set hicomer.updater_model=<output>/model``
makes the updater use it) and ``<output>/metrics.json``. Killed and restarted with the same
``--output`` (or ``training.storage_path``) it resumes from the last checkpoint.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any, Optional

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import typer

from memgraft.config import Settings
from training.common import (PROFILE_OPTION, RAY_ADDRESS_OPTION, RESUME_OPTION, SET_OPTION, init_ray, load,
                             said_as_exit)

RUN_NAME = "updater-sft"


def sft_trainer(settings: Settings, model_path: str, records: list[dict[str, Any]], output_dir: Path, *,
                max_steps: int | None = None, save_steps: int | None = None) -> Any:
    """The TRL SFTTrainer of a run, also what ``bench/train_sft.py`` times (``save_steps=0``: no checkpoints)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from training.hf_run import freeze_lower_layers, hf_args

    t = settings.training
    kwargs = hf_args(t, output_dir, max_steps=max_steps or t.sft_max_steps, batch_size=t.sft_batch_size,
                     grad_accum=t.sft_grad_accum, lr=t.sft_lr, save_steps=save_steps or t.sft_save_steps)
    if save_steps == 0:
        kwargs["save_strategy"] = "no"
    # Arguments first: under ZeRO-3 they make from_pretrained load the weights already partitioned.
    args = SFTConfig(**kwargs, max_length=t.sft_max_length, completion_only_loss=True)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    freeze_lower_layers(model, t.trainable_layers)
    return SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(records), processing_class=tokenizer)


def sft_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: build the SFTTrainer and train, resuming from the run's latest checkpoint."""
    from training.common import worker_threads
    from training.hf_run import scratch_dir, train_hf

    settings = Settings.model_validate(config["settings"])
    worker_threads(settings.training)
    trainer = sft_trainer(settings, config["model"], config["records"], scratch_dir(config["run_id"]))
    train_hf(trainer, settings.training.sft_max_steps)


def run_sft(settings: Settings, output: str | Path, *, resume: bool = True, evaluate_before: bool = True,
            evaluate_after: bool = True, ray_address: str | None = None) -> dict[str, Any]:
    """Split, (evaluate the base model,) train in Ray Train, export ``<output>/model``, evaluate it."""
    from memgraft.collab.train.training_data import balanced, sft_record
    from training.hf_run import base_model
    from training.updater_data import updater_data
    from training.updater_eval import evaluate, train_export_score

    t = settings.training
    out = Path(output)
    data = updater_data(settings)
    records = [sft_record(r) for r in balanced(data.train, t.sft_examples, t.seed)]
    init_ray(ray_address)
    report: dict[str, Any] = {"data": {**data.summary(), "sft_records": len(records)}}
    if evaluate_before:
        report["before"] = evaluate(settings, t.base_model or None, data.eval_rows)
    config = {"settings": settings.model_dump(), "model": base_model(settings), "records": records,
              "run_id": uuid.uuid4().hex}
    return train_export_score(sft_loop, config, settings, out, RUN_NAME, resume, report, stage="sft",
                              rows=data.eval_rows if evaluate_after else None, max_steps=t.sft_max_steps)


app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def main(
    output: str = typer.Option("out/train/updater/sft", "--output", help="model/, metrics.json, ray/ (checkpoints)"),
    profile: str = PROFILE_OPTION,
    set_: list[str] = SET_OPTION,
    resume: bool = RESUME_OPTION,
    eval_: bool = typer.Option(True, "--eval/--no-eval", help="score the base model and the trained one"),
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
) -> None:
    from training.updater_eval import print_scores

    settings = load(profile, set_)
    with said_as_exit("updater_sft"):
        report = run_sft(settings, output, resume=resume, evaluate_before=eval_, evaluate_after=eval_,
                         ray_address=ray_address)
    d, tr = report["data"], report["train"]
    typer.echo(f"SFT: {d['sft_records']} records from {d['train_sources']} training sources; "
               f"held-out: {d['eval_instances']} of {d['heldout_decisions']} decisions from "
               f"{d['heldout_sources']} sources; step {tr.get('step')} (resumed from {tr.get('resumed_from_step', 0)}), "
               f"last loss {tr.get('loss', float('nan')):.3f}; model in {tr['model']}")
    if eval_:
        print_scores("updater on held-out decisions", [("before", report["before"]), ("after SFT", report["sft"])])


if __name__ == "__main__":
    app()
