"""A sentence embedder of BERT, mean pooling and normalisation, in plain torch: the bundled all-MiniLM-L6-v2.

Why: each process that embeds (Serve's embedder replicas, the build's embedding actors, ingest workers) paid
about 5 s of CPU importing sentence-transformers, scikit-learn and transformers before its first vector, on
every start and every replaced replica. The same weights and the same ``tokenizer.json`` load here in a
fraction of a second after torch and give sentence-transformers' vectors to float rounding
(tests/test_bert_embedder.py). A folder of any other shape is left to sentence-transformers
(:func:`plain_bert_folder` says which). The pair judge's second opinion, a LoRA of the same model, runs on
:class:`BertEncoder` too (:mod:`memgraft.collab.maintain.pair_folded`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

TRANSFORMER, POOLING, NORMALIZE = (f"sentence_transformers.models.{n}" for n in ("Transformer", "Pooling", "Normalize"))


def _json(path: Path) -> dict[str, Any] | list[Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def plain_bert_folder(path: str | Path) -> bool:
    """A local sentence-transformers folder of exactly BERT (absolute positions, GELU), mean pooling and
    optionally normalisation, with its weights in ``model.safetensors`` and a ``tokenizer.json``."""
    p = Path(path)
    if not p.is_dir() or not (p / "model.safetensors").is_file() or not (p / "tokenizer.json").is_file():
        return False
    modules = _json(p / "modules.json")
    kinds = [m.get("type") for m in modules] if isinstance(modules, list) else []
    if kinds not in ([TRANSFORMER, POOLING], [TRANSFORMER, POOLING, NORMALIZE]) or modules[0].get("path"):
        return False
    pooling = _json(p / modules[1]["path"] / "config.json")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v} if isinstance(pooling, dict) else {}
    config = _json(p / "config.json")
    return (modes == {"pooling_mode_mean_tokens"} and isinstance(config, dict) and config.get("model_type") == "bert"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and config.get("hidden_act") == "gelu" and not _json(p / "sentence_bert_config.json").get("do_lower_case"))


def _block(hidden: int, inner: int, eps: float) -> nn.ModuleDict:
    """One encoder layer, its parts named as in the saved weights (``attention.self.query``, ...)."""
    return nn.ModuleDict({
        "attention": nn.ModuleDict({
            "self": nn.ModuleDict({k: nn.Linear(hidden, hidden) for k in ("query", "key", "value")}),
            "output": nn.ModuleDict({"dense": nn.Linear(hidden, hidden), "LayerNorm": nn.LayerNorm(hidden, eps=eps)})}),
        "intermediate": nn.ModuleDict({"dense": nn.Linear(hidden, inner)}),
        "output": nn.ModuleDict({"dense": nn.Linear(inner, hidden), "LayerNorm": nn.LayerNorm(hidden, eps=eps)})})


def bert_config(path: str | Path) -> dict[str, Any]:
    return dict(_json(Path(path) / "config.json"))


def bert_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """The folder's encoder weights under this module's names (the pooler, which mean pooling never reads, left out)."""
    from safetensors.torch import load_file

    weights = load_file(str(Path(path) / "model.safetensors"))
    return {k.removeprefix("bert."): v for k, v in weights.items()
            if not k.removeprefix("bert.").startswith("pooler.") and not k.endswith("embeddings.position_ids")}


def bert_tokenizer(path: str | Path, max_length: int, pad_id: int = 0) -> Any:
    """The folder's ``tokenizer.json``, cutting each text (or pair, longest first) at ``max_length`` and padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id) or "[PAD]")
    return tokenizer


def mean_pool(states: torch.Tensor, mask: torch.Tensor, floor: float = 1e-9) -> torch.Tensor:
    weights = mask.unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(1) / weights.sum(1).clamp(min=floor)


class BertEncoder(nn.Module):
    """BERT's embeddings and encoder layers: token states for ids, their mask and (for pairs) token types."""

    def __init__(self, c: dict[str, Any]):
        super().__init__()
        self.heads, hidden, eps = int(c["num_attention_heads"]), int(c["hidden_size"]), float(c["layer_norm_eps"])
        self.embeddings = nn.ModuleDict({
            "word_embeddings": nn.Embedding(c["vocab_size"], hidden),
            "position_embeddings": nn.Embedding(c["max_position_embeddings"], hidden),
            "token_type_embeddings": nn.Embedding(c["type_vocab_size"], hidden),
            "LayerNorm": nn.LayerNorm(hidden, eps=eps)})
        self.encoder = nn.ModuleDict({"layer": nn.ModuleList(
            _block(hidden, int(c["intermediate_size"]), eps) for _ in range(int(c["num_hidden_layers"])))})

    def get_embedding_dimension(self) -> int:
        return self.embeddings["word_embeddings"].embedding_dim

    def states(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor | None = None) -> torch.Tensor:
        e = self.embeddings
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = e["word_embeddings"](ids) + e["position_embeddings"](positions) + e["token_type_embeddings"](
            torch.zeros_like(ids) if types is None else types)
        x = e["LayerNorm"](x)
        # padding gets the dtype's lowest score: attention reads real tokens only
        keep = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(mask == 0, torch.finfo(x.dtype).min)[:, None, None, :]
        b, n, h = x.shape[0], x.shape[1], self.heads
        for layer in self.encoder["layer"]:
            att = layer["attention"]

            def heads(t: torch.Tensor) -> torch.Tensor:
                return t.view(b, n, h, -1).transpose(1, 2)

            q, k, v = (heads(att["self"][name](x)) for name in ("query", "key", "value"))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=1.0 / math.sqrt(q.shape[-1]))
            a = a.transpose(1, 2).reshape(b, n, -1)
            x = att["output"]["LayerNorm"](att["output"]["dense"](a) + x)
            inner = F.gelu(layer["intermediate"]["dense"](x))
            x = layer["output"]["LayerNorm"](layer["output"]["dense"](inner) + x)
        return x


class BertSentenceEncoder(BertEncoder):
    """BERT's encoder, then the mean of the unpadded tokens' states, unit-normalised when the folder says so.
    Called as a SentenceTransformer is where this code calls one (``encode``, ``to``, the dtype probe)."""

    def __init__(self, path: str | Path):
        c = bert_config(path)
        super().__init__(c)
        self.normalize = len(_json(Path(path) / "modules.json")) == 3
        self.max_seq_length = int(_json(Path(path) / "sentence_bert_config.json").get("max_seq_length")
                                  or c["max_position_embeddings"])
        self.load_state_dict(bert_weights(path), strict=True)
        self.eval().requires_grad_(False)
        self.tokenizer = bert_tokenizer(path, self.max_seq_length, int(c.get("pad_token_id") or 0))

    @torch.inference_mode()
    def _batch(self, texts: Sequence[str]) -> torch.Tensor:
        encoded = self.tokenizer.encode_batch([t.strip() for t in texts])
        ids = torch.tensor([e.ids for e in encoded])
        mask = torch.tensor([e.attention_mask for e in encoded])
        pooled = mean_pool(self.states(ids, mask), mask)
        return (F.normalize(pooled, p=2, dim=1) if self.normalize else pooled).float()

    def encode(self, texts: Sequence[str], batch_size: int = 32, normalize_embeddings: bool = False,
               **_: Any) -> np.ndarray:
        """Longest texts first in batches of ``batch_size`` (less padding), rows back in the callers' order."""
        texts = list(texts)
        out = np.zeros((len(texts), self.get_embedding_dimension()), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            rows = order[start:start + batch_size]
            vecs = self._batch([texts[i] for i in rows])
            if normalize_embeddings and not self.normalize:
                vecs = F.normalize(vecs, p=2, dim=1)
            out[rows] = vecs.numpy()
        return out
