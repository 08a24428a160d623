"""Conflict F1 and Maintenance Accuracy of an updater model on held-out gold decisions.

The model judges through the real updater: ``make_policy`` with ``hicomer.updater_model``
set to the model folder, the same prompt (:func:`~memgraft.collab.maintain.prompts.judge_messages`),
the same schema-constrained decoding and the same :func:`~memgraft.collab.maintain.judgement.normalise`.
The one difference from ``LLMPolicy.judge`` is that a target whose answer stays invalid after
the retries is scored as a missing prediction (wrong) instead of stopping the run, so an
untrained model can be measured. Decoding is greedy (``training.eval_temperature``).

It runs as a Ray task holding ``training.eval_gpus`` GPUs, so on the cluster the driver
(often on a CPU head node) does not load the model itself; a model given as a Ray
checkpoint is read from the run's storage by that task.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from memgraft.collab.evaluate import metrics
from memgraft.collab.data import Row
from memgraft.config import Settings

if TYPE_CHECKING:
    from ray.train import Checkpoint


def judge_settings(settings: Settings, model: str | None) -> Settings:
    """The settings the evaluation judges under: the LLM policy on ``model`` (None: the base), greedy."""
    t = settings.training
    # The judging task holds training.eval_gpus GPUs: a vLLM engine there cannot shard over more.
    tp = max(1, min(settings.models.llm_tensor_parallel, int(t.eval_gpus) or 1))
    return settings.model_copy(update={
        "hicomer": settings.hicomer.model_copy(update={"updater_policy": "llm", "updater_model": model or ""}),
        "models": settings.models.model_copy(update={"llm_tensor_parallel": tp}),
        "generation": settings.generation.model_copy(update={"temperature": t.eval_temperature,
                                                             "max_new_tokens": t.eval_max_new_tokens}),
    })


def score_updater(settings: Settings, model: str | None, rows: Sequence[Row]) -> dict[str, Any]:
    """Judge every row's target with ``model`` and score against the gold labels."""
    from memgraft.collab.maintain.judgement import normalise
    from memgraft.collab.maintain.policies import make_policy, target_from_gold
    from memgraft.collab.maintain.prompts import MaintenanceJudgement, judge_messages
    from memgraft.models.llm.base import generate_structured

    s = judge_settings(settings, model)
    started = time.perf_counter()
    policy = make_policy(s)
    loaded = time.perf_counter()
    targets = [target_from_gold(r) for r in rows]
    g = s.generation
    results = generate_structured(policy.llm, [judge_messages(t) for t in targets], MaintenanceJudgement,  # type: ignore[attr-defined]
                                  retries=g.json_retries, max_new_tokens=g.max_new_tokens, temperature=g.temperature)
    relations: dict[int, str] = {}
    decisions: dict[int, dict[str, Any]] = {}
    for i, (t, res) in enumerate(zip(targets, results)):
        if res.value is None:
            continue
        j = normalise(t, res.value.relation, res.value.action, res.value.maintained, res.value.reason)
        relations[i] = str(j.relation)
        decisions[i] = {"relation": str(j.relation), "action": str(j.action), "valid": str(j.action) == "keep"}
    f1 = metrics.conflict_f1(relations, {i: r["relation"] for i, r in enumerate(rows)})
    accuracy = metrics.maintenance_accuracy(decisions, {i: {"relation": r["relation"], "action": r["action"],
                                                            "valid": r["valid"]} for i, r in enumerate(rows)})
    return {"model": model or s.models.llm, "conflict_f1": float(f1["f1"]), "macro_f1": float(f1["macro_f1"]),
            "maintenance_accuracy": accuracy, "instances": len(rows), "valid_json": len(decisions),
            "completion_tokens": sum(r.completion_tokens for r in results),
            "load_s": round(loaded - started, 1), "judge_s": round(time.perf_counter() - loaded, 1),
            "predicted": [relations.get(i) for i in range(len(rows))]}


def evaluate(settings: Settings, model: "str | Checkpoint | None", rows: Sequence[Row]) -> dict[str, Any]:
    """:func:`score_updater` in a Ray task sized by the settings (one CPU worker's worth locally)."""
    import ray

    t = settings.training

    @ray.remote(num_cpus=t.cpus_per_worker, num_gpus=t.eval_gpus, max_retries=0)
    def task(model: "str | Checkpoint | None") -> dict[str, Any]:
        from training.common import model_folder, worker_thread_count

        s = settings.model_copy(deep=True)
        if not s.models.torch_threads:  # Ray sets OMP_NUM_THREADS=1 for a task: name the count
            s.models.torch_threads = worker_thread_count(t)
        with model_folder(model) as folder:
            return score_updater(s, folder, rows)

    if isinstance(model, str):
        from training.common import loadable

        model = loadable(model)
    out = ray.get(task.remote(model))
    if model is not None and not isinstance(model, str):
        out["model"] = f"checkpoint {model.path}"
    return out


def print_scores(title: str, rows: Sequence[tuple[str, dict[str, Any]]]) -> None:
    from rich.table import Table

    from training.common import wide_console

    con = wide_console(140)
    table = Table(title=title)
    for col in ("stage", "Conflict F1", "macro F1", "Maintenance Acc.", "valid JSON", "seconds", "model"):
        table.add_column(col, justify="left" if col in ("stage", "model") else "right")
    for stage, s in rows:
        table.add_row(stage, f"{s['conflict_f1']:.3f}", f"{s['macro_f1']:.3f}", f"{s['maintenance_accuracy']:.3f}",
                      f"{s['valid_json']}/{s['instances']}", f"{s['load_s'] + s['judge_s']:.0f}", str(s["model"]))
    con.print(table)


def train_export_score(loop: Any, config: dict[str, Any], settings: Settings, output: Path, run_name: str,
                       resume: bool, report: dict[str, Any], *, stage: str, rows: Sequence[Row] | None,
                       max_steps: int) -> dict[str, Any]:
    """The tail SFT and GRPO share: fit ``loop`` in Ray Train (unless a resumed run already took its
    ``max_steps``), export ``<output>/model``, record the run under ``report["train"]``, score the model on
    ``rows`` (None: skip) under ``report[stage]``, and write ``<output>/metrics.json``."""
    from training.common import fit, storage_path, write_json
    from training.hf_run import export_model, finished_run

    storage = storage_path(settings.training, output)
    result = (finished_run(storage, run_name, max_steps) if resume else None) or fit(
        loop, config, settings, storage, run_name, resume)
    if result.checkpoint is None:
        raise RuntimeError(f"the {stage.upper()} run under {storage}/{run_name} reported no checkpoint")
    model_dir = export_model(result.checkpoint, output / "model")
    report["train"] = {"storage": storage, "checkpoint": result.checkpoint.path, "model": str(model_dir),
                       **{k: v for k, v in (result.metrics or {}).items() if isinstance(v, (int, float, str))}}
    if rows is not None:
        remote = "://" in storage  # the driver's output may not be visible to the task's node
        report[stage] = evaluate(settings, result.checkpoint if remote else str(model_dir), rows)
    write_json(output / "metrics.json", report)
    return report
