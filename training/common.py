"""Ray Train plumbing shared by the training entry points (updater SFT and GRPO, the validity scorer).

Each entry point is one ``TorchTrainer`` run. Its ``ScalingConfig`` comes from the
``training`` settings (CPU workers locally, GPU workers on the cluster) and its
``RunConfig(name, storage_path)`` puts every checkpoint under ``<storage_path>/<name>``
(a local folder or a URI). Ray Train 2.60 runs the V2 API by default, where
``Trainer.restore``/``can_restore`` are deprecated and raise: a run resumes by being started
again with the same name and storage path. The controller then reloads the run's
checkpoint manager snapshot and every worker finds the latest checkpoint in
``ray.train.get_checkpoint()``. ``--no-resume`` deletes that folder first.

The Hugging Face runs' own plumbing (checkpoints, DeepSpeed, freezing) is in :mod:`training.hf_run`.
"""

from __future__ import annotations

import json
import logging
import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import typer

from memgraft.config import Settings, TrainingSettings, load_settings

if TYPE_CHECKING:
    from ray.train import Checkpoint, Result


# -- settings and Ray -------------------------------------------------------------------------


# The options every training entry point takes (typer reads these as the parameters' defaults).
PROFILE_OPTION = typer.Option("local", "--profile", "--config", help="configs/<name>.yaml or a YAML path")
SET_OPTION = typer.Option([], "--set", help="override a setting: section.field=value (repeatable)")
RESUME_OPTION = typer.Option(True, "--resume/--no-resume", help="continue from the run's last checkpoint")
RAY_ADDRESS_OPTION = typer.Option(None, "--ray-address", help="local|auto|ADDRESS")



def load(profile: str, sets: Sequence[str]) -> Settings:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return load_settings(profile, list(sets))


@contextmanager
def said_as_exit(prog: str) -> Iterator[None]:
    """An entry point's refusal (workers the local Ray cannot hold) as one line on stderr and exit 2, not a traceback."""
    from pipelines.runtime import PipelineFitError

    try:
        yield
    except PipelineFitError as err:
        typer.echo(f"{prog}: {err}", err=True)
        raise typer.Exit(2) from err


_started_local_ray = False  # set by init_ray: a local Ray of a fixed size, which never grows


def init_ray(address: str | None = None) -> None:
    """Join RAY_ADDRESS or a running head (``ray job submit`` sets it), else start a local Ray."""
    global _started_local_ray
    from pipelines.runtime import init_ray as join_or_start

    # Ray Train's print patch (propagated to the workers) breaks dill's stdout capture, which
    # `datasets` uses to fingerprint TRL's map functions: each map would print a disassembly.
    os.environ.setdefault("RAY_TRAIN_ENABLE_PRINT_PATCH", "0")
    if address in (None, "local") and not os.environ.get("RAY_ADDRESS"):
        # A local Ray is one node, which no spot reclaim preempts alone; Ray Train's preemption watcher
        # there only logs an ERROR line about its own constructor arguments (ray-project/ray#53727). The
        # local raylet inherits this process's environment; a cluster keeps its own setting.
        os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
    _started_local_ray = join_or_start(address) or _started_local_ray


def loadable(model: str) -> str:
    """A local folder as an absolute path (Ray Train workers run in their own working directory); a hub id as is."""
    return str(Path(model).resolve()) if Path(model).exists() else model


def storage_path(training: TrainingSettings, output: str | Path) -> str:
    """Where checkpoints go: ``training.storage_path`` (a folder or URI), else ``<output>/ray``."""
    return training.storage_path or str((Path(output) / "ray").resolve())


def clear_run(storage: str, name: str) -> None:
    """Delete a run's checkpoints (``--no-resume``), on a local folder or any pyarrow filesystem URI."""
    import pyarrow.fs as pafs

    fs, root = pafs.FileSystem.from_uri(storage if "://" in storage else str(Path(storage).resolve()))
    path = f"{root.rstrip('/')}/{name}"
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)


def scaling_config(training: TrainingSettings):
    """Workers and the resources each holds: CPUs locally, a GPU each (plus CPUs) on the cluster."""
    from ray.train import ScalingConfig

    resources: dict[str, float] = {"CPU": training.cpus_per_worker}
    if training.use_gpu:
        resources["GPU"] = training.gpus_per_worker
    return ScalingConfig(num_workers=training.num_workers, use_gpu=training.use_gpu, resources_per_worker=resources)


def worker_fit_problem(training: TrainingSettings, have: Mapping[str, float]) -> str | None:
    """What the training workers ask for that Ray's resources ``have`` lack, or None when they all fit.
    Ray Train starts every worker or none: a group that cannot be placed waits for the cluster to grow."""
    n = training.num_workers
    need = {"CPU": training.cpus_per_worker * n, "GPU": training.gpus_per_worker * n if training.use_gpu else 0.0}
    short = [f"{v:g} {r} (Ray has {float(have.get(r, 0.0)):g})" for r, v in need.items()
             if v > float(have.get(r, 0.0)) + 1e-9]
    if not short:
        return None
    asked = f"training.num_workers={n} at training.cpus_per_worker={training.cpus_per_worker:g}"
    if training.use_gpu:
        asked += f" and training.gpus_per_worker={training.gpus_per_worker:g} (training.use_gpu)"
    return (f"{asked} ask for {' and '.join(short)}: Ray Train could never start them. Lower them"
            f"{', set training.use_gpu=false' if training.use_gpu else ''}, or run where Ray has them.")


def run_config(training: TrainingSettings, storage: str, name: str):
    from ray.train import CheckpointConfig, RunConfig

    return RunConfig(name=name, storage_path=storage,
                     checkpoint_config=CheckpointConfig(num_to_keep=training.checkpoints_to_keep))


def check_workers_fit(settings: Settings) -> None:
    """Refuse a run whose workers Ray can never place before it prepares any data (``fit`` checks again)."""
    import ray

    from pipelines.runtime import refuse_or_warn

    refuse_or_warn(worker_fit_problem(settings.training, ray.cluster_resources()), _started_local_ray)


def fit(loop: Callable[[dict], None], config: dict, settings: Settings, storage: str, name: str,
        resume: bool) -> "Result":
    """Run ``loop`` on the configured workers; without ``resume`` the run's old checkpoints go first."""
    from ray.train.torch import TorchTrainer

    check_workers_fit(settings)
    if not resume:
        clear_run(storage, name)
    trainer = TorchTrainer(loop, train_loop_config=config, scaling_config=scaling_config(settings.training),
                           run_config=run_config(settings.training, storage, name))
    return trainer.fit()


# -- inside a worker ----------------------------------------------------------------------------


def worker_thread_count(training: TrainingSettings) -> int:
    """Torch threads for a training worker or evaluation task: its CPUs, at least one, at most the machine's."""
    from memgraft.models.threads import available_cpus

    return max(1, min(int(training.cpus_per_worker), available_cpus()))


def worker_threads(training: TrainingSettings) -> int:
    """Ray sets OMP_NUM_THREADS from the worker's CPUs (1 for a fraction): say how many, explicitly."""
    from memgraft.models.threads import set_torch_threads

    return set_torch_threads(worker_thread_count(training))


# -- after the run -------------------------------------------------------------------------------


@contextmanager
def model_folder(model: "str | Checkpoint | None") -> Iterator[str | None]:
    """A local folder for a model given as a path, a Ray checkpoint (downloaded if remote) or None."""
    if model is None or isinstance(model, str):
        yield model
        return
    with model.as_directory() as d:
        yield d


def wide_console(width: int = 140):
    """A rich console that does not squeeze tables into 80 columns when piped or captured."""
    from rich.console import Console

    con = Console()
    return con if con.is_terminal else Console(width=max(con.width, width))


def write_json(path: str | Path, data: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str))
    return path
