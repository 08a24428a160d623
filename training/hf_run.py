"""Hugging Face (TRL) training inside Ray Train workers: checkpoints, DeepSpeed, frozen layers, export.

Each HF checkpoint folder (model, tokenizer, optimizer, scheduler, trainer state, and
the DeepSpeed shards under ZeRO) is reported as the Ray checkpoint itself
(:class:`ReportCheckpoints`), so a restarted worker passes the run's latest checkpoint
straight to ``trainer.train(resume_from_checkpoint=...)`` and the driver exports the model
files of the last one as a plain HF folder (:func:`export_model`) that
``hicomer.updater_model`` loads.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from memgraft.config import Settings, TrainingSettings
from training.common import loadable

if TYPE_CHECKING:
    from ray.train import Checkpoint, Result

log = logging.getLogger("memgraft.training")

HERE = Path(__file__).resolve().parent
DEEPSPEED_CONFIGS = {"zero2": HERE / "ds_zero2.json", "zero3": HERE / "ds_zero3.json"}
# HF checkpoint files that are training state, not the model: left out of an exported model folder.
TRAINING_STATE = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "latest",
                  "zero_to_fp32.py", "zero_to_torch.py", "rng_state")


def deepspeed_config(value: str) -> dict[str, Any] | None:
    """``training.deepspeed`` as a config dict: "" none, ``zero2``/``zero3`` the bundled files, else a JSON path."""
    if not value:
        return None
    path = DEEPSPEED_CONFIGS.get(value, Path(value))
    if not path.exists():
        raise FileNotFoundError(f"training.deepspeed={value!r}: not zero2, zero3 or an existing JSON file")
    return json.loads(path.read_text())


def base_model(settings: Settings) -> str:
    """The model training starts from: ``training.base_model`` or ``models.llm`` as a loadable HF folder or hub id."""
    from memgraft.models.llm.transformers_backend import ensure_hf_folder

    return loadable(str(ensure_hf_folder(settings.training.base_model or settings.models.llm, settings.cache_path)))


def freeze_lower_layers(model: Any, trainable_layers: int) -> tuple[int, int]:
    """Train only the top ``trainable_layers`` blocks and the final norm (0: everything).

    On a CPU a full backward pass through SmolLM2's 30 blocks costs about 3x the forward;
    stopping the gradient low in the stack keeps a local run in minutes. Embeddings (tied
    to the LM head in small models) stay frozen. Returns (trainable, total) parameters.
    """
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    if trainable_layers <= 0:
        return total, total
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"{type(model).__name__}: no .model.layers to freeze below; set training.trainable_layers=0")
    for p in params:
        p.requires_grad_(False)
    for module in [*layers[-trainable_layers:], getattr(inner, "norm", None)]:
        if module is not None:
            for p in module.parameters():
                p.requires_grad_(True)
    return sum(p.numel() for p in params if p.requires_grad), total


def scratch_dir(run_id: str) -> Path:
    """The HF output folder of this attempt, shared by a node's workers (HF writes one checkpoint per node)."""
    import ray.train

    ctx = ray.train.get_context()
    path = Path(tempfile.gettempdir()) / "memgraft-train" / ctx.get_experiment_name() / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def skip_shm_kernel_alone() -> None:
    """A lone CPU worker has no peer to share memory with: skip DeepSpeed's shared-memory all-reduce kernel.

    DeepSpeed JIT-compiles it (about a minute on 2 cores, again whenever the compiler flags
    differ, e.g. another virtual environment) when its torch backend starts, for every run.
    """
    import ray.train

    try:
        alone = ray.train.get_context().get_world_size() == 1
    except Exception:  # not in a Ray Train worker (bench/train_sft.py): one process
        alone = True
    if alone:
        import deepspeed.ops

        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


def hf_args(training: TrainingSettings, output_dir: Path, *, max_steps: int, batch_size: int, grad_accum: int,
            lr: float, save_steps: int) -> dict[str, Any]:
    """TrainingArguments shared by the SFT and GRPO configs."""
    if training.deepspeed and not training.use_gpu:
        skip_shm_kernel_alone()
    return dict(
        output_dir=str(output_dir), max_steps=max_steps, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=grad_accum, learning_rate=lr, logging_steps=1, save_strategy="steps",
        save_steps=save_steps, save_total_limit=1, report_to="none", seed=training.seed, bf16=training.bf16,
        use_cpu=not training.use_gpu, deepspeed=deepspeed_config(training.deepspeed),
        activation_checkpointing=training.gradient_checkpointing, dataloader_num_workers=0, disable_tqdm=True,
        ddp_find_unused_parameters=False,  # frozen layers are not "unused": skip DDP's extra graph walk
    )


class ReportCheckpoints(TrainerCallback):
    """Reports every HF checkpoint to Ray Train as the Ray checkpoint, with the logged metrics.

    Like ``ray.train.huggingface.transformers.RayTrainReportCallback``, but the HF folder
    is the checkpoint itself (no copy), only one worker per node uploads it (a node's
    workers share the folder), training always saves at its last step, and the metrics
    carry ``step`` and ``resumed_from_step`` so a restart is visible.
    """

    def __init__(self) -> None:
        self.resumed_from = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.resumed_from = state.global_step  # the restored step when resuming (loaded before this call)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        import ray.train

        metrics: dict[str, Any] = {}
        for entry in state.log_history:
            metrics.update(entry)
        metrics.update(step=state.global_step, resumed_from_step=self.resumed_from)
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        upload = ray.train.get_context().get_local_rank() == 0 and folder.exists()
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(str(folder)) if upload else None)


def finished_steps(checkpoint_dir: str | Path | None) -> int:
    """The global step an HF checkpoint folder was saved at (0 when there is none)."""
    if checkpoint_dir is None:
        return 0
    state = Path(checkpoint_dir) / "trainer_state.json"
    return int(json.loads(state.read_text())["global_step"]) if state.exists() else 0


def finished_run(storage: str, name: str, max_steps: int) -> "Result | None":
    """The run's result when its latest checkpoint already reached ``max_steps``, else None: a rerun of a
    finished run needs no worker group (Ray Train's start is 10-15 s on 2 cores) to learn it has nothing to do."""
    from ray.train import Result

    try:
        result = Result.from_path(f"{storage.rstrip('/')}/{name}")
    except Exception:  # no run there yet (or not one Ray Train can read): fit it
        return None
    if result.checkpoint is None:
        return None
    with result.checkpoint.as_directory() as folder:
        done = finished_steps(folder)
    return result if done >= max_steps else None


def train_hf(trainer: Any, max_steps: int) -> None:
    """Train an HF/TRL trainer inside a Ray Train worker, resuming from the run's latest checkpoint.

    A run whose latest checkpoint already reached ``max_steps`` reports nothing and
    returns: the driver reads that checkpoint from the restored run.
    """
    import ray.train
    from ray.train.huggingface.transformers import prepare_trainer

    trainer.add_callback(ReportCheckpoints())
    trainer = prepare_trainer(trainer)
    checkpoint = ray.train.get_checkpoint()
    with (checkpoint.as_directory() if checkpoint else nullcontext(None)) as resume:
        if resume and finished_steps(resume) >= max_steps:
            log.info("the latest checkpoint is at step %d of %d: nothing to train", finished_steps(resume), max_steps)
            return
        trainer.train(resume_from_checkpoint=resume)
    if ray.train.get_context().get_local_rank() == 0:
        shutil.rmtree(trainer.args.output_dir, ignore_errors=True)



def export_model(checkpoint: "Checkpoint", dest: str | Path) -> Path:
    """Copy an HF checkpoint's model and tokenizer files (not its optimizer or DeepSpeed state) to ``dest``."""
    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with checkpoint.as_directory() as src:
        for item in Path(src).iterdir():
            if item.is_file() and not item.name.startswith(TRAINING_STATE):
                shutil.copy2(item, tmp / item.name)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest
