"""Training HiCoMER's default updater judge (the pair classifier of memgraft.collab.maintain.judge) in Ray Train.

    python training/updater_judge.py [--profile local] [--output out/train/judge] [--ship] [--no-resume]

Data (:mod:`memgraft.collab.train.judge_data`): generated streams (five seeds), the TimeQA
conversion's ``train`` pages and SituatedQA's train file, as labelled (target, reference)
pairs in both orders; ``--neighbours K`` adds each real source's memories, held in one dense team, with their K
nearest memories about another topic as neutral pairs (off by default: README, "Dense teams"). Held out:
another generated seed and the dev halves of TimeQA's ``val`` pages and SituatedQA's dev file
(:mod:`memgraft.collab.data.splits`); no test half or test split of either source is read.

One worker (the data is small; DDP when ``training.num_workers`` > 1) trains with
:func:`memgraft.collab.train.judge_train.train_judge`'s loss and reports a checkpoint per epoch;
a restarted run resumes at the next epoch. Prints, per held-out dataset, pair-level
contradiction precision/recall and the updater's Conflict F1 and Maintenance Accuracy
(relation and action) when the judge maintains the stream, for the untrained judge (the
seeded initial weights) and the trained one. Writes ``<output>/judge.pt``; ``--ship`` also
copies it over the bundled judge (``memgraft/collab/assets/``), which is how the shipped
file was made.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import typer

from memgraft.config import Settings
from memgraft.progress import Progress
from training.common import (PROFILE_OPTION, RAY_ADDRESS_OPTION, RESUME_OPTION, SET_OPTION, fit, init_ray, load,
                             said_as_exit, storage_path, write_json)

RUN_NAME = "updater-judge"
STATE_FILE = "state.pt"
JUDGE_FILE = "judge.pt"
EPOCHS, LR, BATCH, HIDDEN, DROPOUT = 12, 1e-3, 256, 128, 0.4


def judge_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: AdamW over its shard of the pairs, one checkpoint per epoch."""
    import ray.train
    import torch

    from memgraft.collab.maintain.judge import PairJudge, save_judge
    from memgraft.collab.train.judge_train import JudgeData, train_judge
    from training.common import worker_threads

    settings = Settings.model_validate(config["settings"])
    worker_threads(settings.training)
    ctx = ray.train.get_context()
    x, y, epochs = config["x"], config["y"], config["epochs"]
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    data = JudgeData(x[rank::world], y[rank::world])
    torch.manual_seed(settings.training.seed)
    judge = PairJudge(config["dim"], hidden=HIDDEN, dropout=DROPOUT, embedder=config["embedder"])
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            state = torch.load(Path(d) / STATE_FILE, map_location="cpu", weights_only=True)
        judge.load_state_dict(state["judge"])
        start = int(state["epoch"])
    with Progress("train the pair judge", epochs - start, "epochs", enabled=rank == 0) as bar:
        for epoch in range(start, epochs):
            # one epoch at a time, seeded by epoch: a resumed run continues as an uninterrupted one would
            [loss] = train_judge(judge, data, epochs=1, lr=LR * (1 - epoch / epochs), batch_size=BATCH,
                                 seed=settings.training.seed * 100_003 + epoch)
            with tempfile.TemporaryDirectory() as tmp:
                if rank == 0:
                    torch.save({"judge": judge.state_dict(), "epoch": epoch + 1}, Path(tmp) / STATE_FILE)
                    save_judge(judge, Path(tmp) / JUDGE_FILE)
                ray.train.report({"epoch": epoch + 1, "loss": loss, "resumed_from_epoch": start},
                                 checkpoint=ray.train.Checkpoint.from_directory(tmp) if rank == 0 else None)
            bar.advance()


def heldout_scores(judge: Any, heldout: dict[str, Any], embedder: Any, settings: Settings, work: Path,
                   second: Any = None) -> dict[str, Any]:
    """Per held-out dataset: pair scores, and the updater's scores when this judge (with ``second``, the
    pair encoder, for the pairs in doubt) maintains the stream."""
    from memgraft.collab.evaluate.harness import stream_groups, updater_scores, validity_state_scores
    from memgraft.collab.bank import open_bank
    from memgraft.collab.maintain.judge import JudgePolicy
    from memgraft.collab.train.judge_data import dataset_pairs
    from memgraft.collab.train.judge_train import featurise, pair_scores
    from memgraft.collab.maintain.updater import MemoEmbedder, Updater

    out: dict[str, Any] = {}
    for name, data in heldout.items():
        path = work / f"bank-{name}.sqlite"
        path.unlink(missing_ok=True)
        bank = open_bank(path, MemoEmbedder(embedder))
        h = settings.hicomer
        policy = JudgePolicy.from_settings(judge, h, embedder=embedder, second=second)
        updater = Updater(bank, policy, h)
        for group in stream_groups(data):
            updater.apply(group)
        pairs = dataset_pairs(data)
        features = featurise(pairs, embedder)
        probs = policy.blend([p.a for p in pairs], [p.b for p in pairs], judge.probabilities(features.x))
        out[name] = {"pairs": pair_scores(judge, features, h.judge_threshold, probs),
                     "updater": updater_scores(bank, data.gold), "validity": validity_state_scores(bank, data)}
        bank.close()
    return out


def run_judge(settings: Settings, output: str | Path, *, resume: bool = True, ship: bool = False,
              ray_address: str | None = None, sources: dict[str, Any] | None = None,
              heldout: dict[str, Any] | None = None, epochs: int = EPOCHS, encoder: bool = True,
              encoder_sample: int | None = None, embedder: Any = None, neighbours: int = 0) -> dict[str, Any]:
    """Train on ``sources`` (default :func:`judge_sources` ``train``), score on ``heldout`` (its ``heldout``);
    then, with ``encoder``, the judge's second opinion on a sample of the same pairs (training/pair_encoder.py).
    ``neighbours``: also that many nearest other-topic memories per memory of each real source held in one team
    (:func:`memgraft.collab.train.judge_data.neighbour_pairs`), as neutral pairs."""
    import torch

    from memgraft.collab.maintain.judge import BUNDLED, PairJudge, load_judge, save_judge
    from memgraft.collab.train.judge_data import all_pairs, dense_sources, judge_sources, neighbour_pairs
    from memgraft.collab.train.judge_train import training_data
    from memgraft.collab.maintain.updater import MemoEmbedder
    from memgraft.models.embedder import load_embedder

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    embedder = embedder or MemoEmbedder(load_embedder(settings), size=1 << 20)  # a caller's, to share its vectors
    train_sets = sources if sources is not None else judge_sources("train")
    heldout = heldout if heldout is not None else judge_sources("heldout")
    pairs = all_pairs(train_sets)
    # a caller's sources are the whole training data; neighbours (off by default): README, "Dense teams"
    dense = dense_sources() if sources is None and neighbours > 0 else {}
    pairs += [p for name, d in dense.items() for p in neighbour_pairs(d, embedder, name, k=neighbours)]
    data = training_data(pairs, embedder)
    torch.manual_seed(settings.training.seed)
    untrained = PairJudge(int(embedder.dim), hidden=HIDDEN, dropout=DROPOUT, embedder=embedder.name).eval()
    report: dict[str, Any] = {"data": {"train": {k: len(v.gold) for k, v in train_sets.items()},
                                       "neighbours": {k: len(v.memories) for k, v in dense.items()},
                                       "heldout": {k: len(v.gold) for k, v in heldout.items()},
                                       "train_pairs": len(data)},
                              "untrained": heldout_scores(untrained, heldout, embedder, settings, out)}
    init_ray(ray_address)
    storage = storage_path(settings.training, out)
    result = fit(judge_loop, {"settings": settings.model_dump(), "x": data.x, "y": data.y, "embedder": embedder.name,
                              "dim": int(embedder.dim), "epochs": epochs},
                 settings, storage, RUN_NAME, resume)
    if result.checkpoint is None:
        raise RuntimeError(f"the judge run under {storage}/{RUN_NAME} reported no checkpoint")
    with result.checkpoint.as_directory() as d:
        judge = load_judge(Path(d) / JUDGE_FILE)
    report["trained"] = heldout_scores(judge, heldout, embedder, settings, out)
    report["train"] = {"storage": storage, **(result.metrics or {})}
    path = save_judge(judge, out / JUDGE_FILE, metrics=report["trained"])
    shipped = [(path, BUNDLED)]
    if encoder:
        from memgraft.collab.train.judge_data import symmetric
        from memgraft.collab.maintain.pair_encoder import BUNDLED as ENCODER_BUNDLED, save_pair_encoder
        from training.pair_encoder import ENCODER_FILE, SAMPLE, run_encoder

        model, report["encoder_train"] = run_encoder(settings, symmetric(pairs), storage, resume=resume,
                                                     sample=encoder_sample or SAMPLE)
        report["with_encoder"] = heldout_scores(judge, heldout, embedder, settings, out, second=model)
        shipped.append((save_pair_encoder(model, out / ENCODER_FILE, metrics=report["with_encoder"]), ENCODER_BUNDLED))
    if ship:
        for made, bundled in shipped:
            bundled.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(made, bundled)
        report["shipped"] = ", ".join(str(b) for _, b in shipped)
    write_json(out / "metrics.json", report)
    return report


def print_report(report: dict[str, Any]) -> None:
    from rich.table import Table

    from training.common import wide_console

    con = wide_console(140)
    stages = ("untrained", "trained", "with_encoder") if "with_encoder" in report else ("untrained", "trained")
    table = Table(title="pair judge on held-out data (" + " -> ".join(stages) + ")")
    for col in ("dataset", "pair P / R", "Conflict F1", "Maintenance Acc.", "validity P / R"):
        table.add_column(col, justify="left" if col == "dataset" else "right")
    for name in report["trained"]:
        cells = []
        for key in stages:
            r = report[key][name]
            cells.append((f"{r['pairs'].get('precision', 0):.3f} / {r['pairs'].get('recall', 0):.3f}",
                          f"{r['updater']['conflict_f1']:.3f}", f"{r['updater']['maintenance_accuracy']:.3f}",
                          f"{r['validity']['precision']:.3f} / {r['validity']['recall']:.3f}"))
        table.add_row(name, *(" -> ".join(c) for c in zip(*cells)))
    con.print(table)
    tr = report["train"]
    con.print(f"{report['data']['train_pairs']} training pairs; epoch {tr.get('epoch')} (resumed from "
              f"{tr.get('resumed_from_epoch', 0)}), last loss {tr.get('loss', float('nan')):.3f}"
              + (f"; shipped to {report['shipped']}" if report.get("shipped") else ""))


app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def main(
    output: str = typer.Option("out/train/judge", "--output", help="judge.pt, metrics.json, ray/"),
    ship: bool = typer.Option(False, "--ship", help="also copy the trained judge (and encoder) over the bundled ones"),
    encoder: bool = typer.Option(True, "--encoder/--no-encoder", help="also train the pair encoder (~10 min on 2 cores)"),
    neighbours: int = typer.Option(0, "--neighbours", min=0,
                                   help="nearest other-topic memories per memory of a dense team, as neutral pairs"),
    profile: str = PROFILE_OPTION,
    set_: list[str] = SET_OPTION,
    resume: bool = RESUME_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
) -> None:
    settings = load(profile, set_)
    with said_as_exit("updater_judge"):
        report = run_judge(settings, output, resume=resume, ship=ship, ray_address=ray_address, encoder=encoder,
                            neighbours=neighbours)
    print_report(report)


if __name__ == "__main__":
    app()
