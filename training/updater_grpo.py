"""GRPO for the HiCoMER updater with TRL's GRPOTrainer, inside Ray Train.

    python training/updater_grpo.py --init out/train/updater/sft/model [--output out/train/updater/grpo]
        [--profile local|a100|PATH] [--set training.grpo_max_steps=8 ...] [--no-resume] [--no-eval]

Starts from ``--init`` (the SFT model; without it ``training.base_model`` or ``models.llm``)
and optimises R = λ1·R_cons + λ2·R_rev + λ3·R_fmt (``hicomer.reward_consistency``,
``reward_revision``, ``reward_format``; the terms are :mod:`memgraft.collab.train.rewards`) over
the training decisions of the same split as SFT. TRL samples the completions itself,
without the decoding grammar the deployed updater uses: R_fmt is what teaches the model to
stay inside the schema unaided.

Prints Conflict F1 and Maintenance Accuracy on the held-out decisions after GRPO, beside
the "before" and "after SFT" rows of ``<init>/../metrics.json`` when the SFT run wrote one;
writes ``<output>/model`` and ``<output>/metrics.json``; resumes like the SFT run.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import typer

from memgraft.collab.train.rewards import GoldDecision, consistency_reward, format_reward, revision_reward
from memgraft.config import Settings
from training.common import (PROFILE_OPTION, RAY_ADDRESS_OPTION, RESUME_OPTION, SET_OPTION, init_ray, load, loadable,
                             said_as_exit)

RUN_NAME = "updater-grpo"


# -- the reward terms as TRL reward functions (dataset columns arrive as keyword lists) ------------


def _texts(completions: Sequence[Any]) -> list[str]:
    """Completion texts: a conversational completion is a list holding one assistant message."""
    return [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]


def _golds(kwargs: dict[str, Any]) -> list[GoldDecision]:
    return [GoldDecision(r, a, m) for r, a, m in zip(kwargs["gold_relation"], kwargs["gold_action"],
                                                      kwargs["gold_maintained"])]


def r_consistency(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    return [consistency_reward(t, g) for t, g in zip(_texts(completions), _golds(kwargs))]


def r_revision(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    return [revision_reward(t, g) for t, g in zip(_texts(completions), _golds(kwargs))]


def r_format(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    return [format_reward(t) for t in _texts(completions)]


REWARD_FUNCS = (r_consistency, r_revision, r_format)


# -- the worker --------------------------------------------------------------------------------------


def grpo_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: build the TRL GRPOTrainer and train, resuming from the run's latest checkpoint."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from training.common import worker_threads
    from training.hf_run import freeze_lower_layers, hf_args, scratch_dir, train_hf

    settings = Settings.model_validate(config["settings"])
    t, h = settings.training, settings.hicomer
    worker_threads(t)
    args = GRPOConfig(**hf_args(t, scratch_dir(config["run_id"]), max_steps=t.grpo_max_steps,
                                batch_size=t.grpo_batch_size, grad_accum=1, lr=t.grpo_lr, save_steps=t.grpo_save_steps),
                      num_generations=t.grpo_num_generations, max_completion_length=t.grpo_max_completion_length,
                      temperature=t.grpo_temperature, beta=t.grpo_beta,
                      reward_weights=[h.reward_consistency, h.reward_revision, h.reward_format])
    tokenizer = AutoTokenizer.from_pretrained(config["model"])
    model = AutoModelForCausalLM.from_pretrained(config["model"], dtype=torch.float32)
    freeze_lower_layers(model, t.trainable_layers)
    trainer = GRPOTrainer(model=model, reward_funcs=list(REWARD_FUNCS), args=args,
                          train_dataset=Dataset.from_list(config["records"]), processing_class=tokenizer)
    train_hf(trainer, t.grpo_max_steps)


def _previous(init: str | None) -> dict[str, Any]:
    """The SFT run's metrics (``<init>/../metrics.json``), if ``--init`` is an SFT output's model."""
    if not init:
        return {}
    path = Path(init).parent / "metrics.json"
    return json.loads(path.read_text()) if path.exists() else {}


def run_grpo(settings: Settings, output: str | Path, init: str | None = None, *, resume: bool = True,
             evaluate_after: bool = True, ray_address: str | None = None) -> dict[str, Any]:
    """Train from ``init`` in Ray Train, export ``<output>/model``, evaluate it on the held-out decisions."""
    from memgraft.collab.train.training_data import balanced, grpo_record
    from training.hf_run import base_model
    from training.updater_data import updater_data
    from training.updater_eval import train_export_score

    t = settings.training
    out = Path(output)
    data = updater_data(settings)
    records = [grpo_record(r) for r in balanced(data.train, None, t.seed + 1)]
    start = loadable(init) if init else base_model(settings)
    init_ray(ray_address)
    previous = _previous(init)
    report: dict[str, Any] = {"data": {**data.summary(), "grpo_records": len(records)}, "init": start,
                              **{k: previous[k] for k in ("before", "sft") if k in previous}}
    config = {"settings": settings.model_dump(), "model": start, "records": records, "run_id": uuid.uuid4().hex}
    return train_export_score(grpo_loop, config, settings, out, RUN_NAME, resume, report, stage="grpo",
                              rows=data.eval_rows if evaluate_after else None, max_steps=t.grpo_max_steps)


app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def main(
    init: Optional[str] = typer.Option(None, "--init", help="model to start from (the SFT output's model/)"),
    output: str = typer.Option("out/train/updater/grpo", "--output", help="model/, metrics.json, ray/ (checkpoints)"),
    profile: str = PROFILE_OPTION,
    set_: list[str] = SET_OPTION,
    resume: bool = RESUME_OPTION,
    eval_: bool = typer.Option(True, "--eval/--no-eval", help="score the trained model on held-out decisions"),
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
) -> None:
    from training.updater_eval import print_scores

    settings = load(profile, set_)
    with said_as_exit("updater_grpo"):
        report = run_grpo(settings, output, init, resume=resume, evaluate_after=eval_, ray_address=ray_address)
    tr = report["train"]
    rewards = {k.split("/")[1]: v for k, v in tr.items() if k.startswith("rewards/") and k.endswith("/mean")}
    typer.echo(f"GRPO from {report['init']}: step {tr.get('step')} (resumed from {tr.get('resumed_from_step', 0)}), "
               f"last reward {tr.get('reward', float('nan')):.3f} "
               f"({', '.join(f'{k} {v:.2f}' for k, v in rewards.items())}); model in {tr['model']}")
    if eval_:
        stages = [(name, report[key]) for name, key in (("before", "before"), ("after SFT", "sft"), ("after GRPO", "grpo"))
                  if key in report]
        print_scores("updater on held-out decisions", stages)


if __name__ == "__main__":
    app()
