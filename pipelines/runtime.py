"""How the pipelines start Ray and what reaches the terminal.

Our own log lines (``memgraft.*``) at INFO; everyone else's (Ray, Ray Data,
transformers, sentence-transformers) at WARNING or above, unless ``--verbose``.
Quiet also means:

- no weight-loading bars from transformers in the driver or the local workers;
- in a terminal, Ray Data draws its own progress bars; elsewhere (a log file, CI, ``ray
  job submit``) they are off and each stage prints one progress line every few seconds
  (:mod:`memgraft.progress`) instead of Ray Data's multi-line block every 10 s.

One line stays, from Ray's C++ core in the driver, once per run that starts a Ray Data
actor pool: "MapWorker(...) has constructor arguments in the object store and
max_restarts > 0" (ray-project/ray#53727). It is not about an argument of ours (the
stages receive only ``Settings``, about 3 KB): Ray Data itself hands every pool's map
function to its actors as a ``ray.put`` reference and restarts actors forever, and it
holds that reference for the whole run, so a restart can always read it. Only
``max_restarts=0`` would silence it, and Ray 2.60 takes that only through the deprecated
``ray_remote_args``; lowering the C++ log level instead makes every Ray process print a
line saying so.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import ray
import ray.data

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# transformers reads both when it is imported (its bars follow huggingface_hub's switch), in this process and in
# the workers of a Ray it starts: quiet without importing transformers (1.5 s) in a command that may never use it
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
_verbose = False
log = logging.getLogger("memgraft.runtime")


def configure_output(verbose: bool = False) -> None:
    """Logging and progress for a pipeline's command line; call before Ray starts."""
    global _verbose
    _verbose = verbose
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format=LOG_FORMAT, force=True)
    logging.getLogger("memgraft").setLevel(logging.INFO)
    if verbose:
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    for name in ("ray", "ray.data", "ray.train", "ray.tune", "ray.serve"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # Ray Data says once, at WARNING, that its bars are off: we turned them off on purpose.
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    if "transformers" in sys.modules:  # imported already: too late for the environment
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()


def ray_data_draws_bars() -> bool:
    """True where Ray Data's own progress bars are on (a terminal): our line per stage then stays quiet."""
    return sys.stdout.isatty() and ray.data.DataContext.get_current().enable_progress_bars


def init_ray(address: str | None = None, **kwargs: Any) -> bool:
    """Join ``address`` (None: RAY_ADDRESS or a running head, else a new local Ray) unless Ray is up.
    True when this call started a new local Ray, which the caller may then stop when done with it."""
    started = False
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=True, configure_logging=False, **kwargs)
        node = getattr(ray._private.worker, "_global_node", None)  # set by ray.init; head only if it started one
        started = bool(getattr(node, "head", False))
    ctx = ray.data.DataContext.get_current()
    if not _verbose and not sys.stdout.isatty():
        ctx.enable_progress_bars = False
    return started


class PipelineFitError(RuntimeError):
    """What a run's actors ask Ray for cannot be placed on the local Ray it started: it would wait forever."""


def refuse_or_warn(problem: str | None, started: bool) -> None:
    """A local Ray the run started has a fixed size, so a ``problem`` there is refused (PipelineFitError);
    a cluster may still grow, so there it is only said."""
    if problem and started:
        raise PipelineFitError(problem)
    if problem:
        log.warning("%s (unless the cluster grows)", problem)


def actor_fit_problem(pipeline: Any, cpus: float, extract_pool: bool = True) -> str | None:
    """Why the build's fixed actor pools leave no CPU for its chunking tasks on ``cpus`` CPUs, or None.
    Ray places every actor of a fixed pool first; a task that then finds no CPU waits for one forever.
    ``extract_pool`` False: extraction runs in vLLM's processor, which sizes its own actors."""
    held, names = 0.0, []
    if extract_pool:
        held += pipeline.extract_actors * pipeline.actor_cpus
        names.append(f"pipeline.extract_actors={pipeline.extract_actors}")
    if not pipeline.embed_chunks_in_driver:
        held += pipeline.embed_actors * pipeline.actor_cpus
        names.append(f"pipeline.embed_actors={pipeline.embed_actors}")
    if not names or held + pipeline.task_cpus <= cpus + 1e-9:
        return None
    pools = " and ".join(names)
    return (f"{pools} at pipeline.actor_cpus={pipeline.actor_cpus:g} hold {held:g} of Ray's {cpus:g} CPUs, which "
            f"leaves less than the {pipeline.task_cpus:g} a chunking task asks for (pipeline.task_cpus): the build "
            f"could never start. Lower the actors or actor_cpus, or give Ray more CPUs.")


def gpu_actors(what: str, per_actor: float, wanted: int, started: bool, have: float | None = None) -> int:
    """How many of ``wanted`` actors of ``per_actor`` GPUs each to start: as many as Ray can place.
    Ray waits forever for an actor it cannot place, so a local Ray this run started (a fixed size) with
    too few GPUs for even one is refused here; a cluster that may grow keeps one, and the log says why."""
    if per_actor <= 0 or wanted <= 0:
        return wanted
    have = float(ray.cluster_resources().get("GPU", 0.0)) if have is None else have
    fit = int(have / per_actor + 1e-9)
    if fit >= wanted:
        return wanted
    asks = (f"{what} asks for {per_actor:g} GPU(s) per actor (models.llm_backend=vllm, "
            f"models.llm_tensor_parallel={per_actor:g}) and Ray has {have:g}")
    if fit == 0:
        refuse_or_warn(f"{asks}: it could never start. Run it where Ray has GPUs, or set models.llm_backend="
                       f"transformers (in-process, CPU or GPU) or openai (an OpenAI-compatible server).", started)
        return 1
    log.warning("%s: %d of the %d actors fit; starting %d", asks, fit, wanted, fit)
    return fit
