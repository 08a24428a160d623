"""The saved pair encoder for inference, without peft or transformers: its LoRA adapters folded into the base
BERT's weights once, and read by :mod:`memgraft.models.bert`.

Why: the default updater asks the pair encoder about its doubtful pairs, so each ingest worker and Serve's
embedder replica imported peft and transformers (about 6 s of CPU) to build the adapters' model, only to fold
them (``PairEncoder._merged``) and never train. The fold here is the same arithmetic, W + (alpha / r) B A, and
gives the adapters' probabilities to 1e-5 (tests/test_pair_encoder_fold.py). Training keeps
:class:`~memgraft.collab.maintain.pair_encoder.PairEncoder`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from memgraft.models.bert import BertEncoder, bert_config, bert_tokenizer, bert_weights, mean_pool

PEFT_PREFIX = "encoder.base_model.model."  # where peft keeps the base model's modules in a PairEncoder's state
TARGETS = {"query", "key", "value", "dense"}  # the modules PairEncoder adapts (its LoraConfig's target_modules)


class FoldedPairEncoder(BertEncoder):
    """P(neutral, compatible, contradiction) for pairs read as one sequence "a [SEP] b", as a PairEncoder's."""

    def __init__(self, config: Any, state: dict[str, torch.Tensor], folder: str, scale: float, dtype: str,
                 source: str = "the pair encoder"):
        c = bert_config(folder)
        super().__init__(c)
        self.config, self.inference_dtype = config, dtype
        weights, folded = bert_weights(folder), set()
        for key, a in state.items():
            if ".lora_A." not in key:
                continue
            module = key.removeprefix(PEFT_PREFIX).split(".lora_A.")[0]
            if f"{module}.weight" in weights:  # the pooler's adapters too were trained, and are never read
                b = state[key.replace(".lora_A.", ".lora_B.")]
                weights[f"{module}.weight"] = weights[f"{module}.weight"] + scale * (b.float() @ a.float())
                folded.add(module)
        adapted = {k.removesuffix(".weight") for k in weights if k.endswith(".weight") and k.split(".")[-2] in TARGETS}
        if adapted - folded or "head.weight" not in state:
            missing = sorted(adapted - folded) or ["head"]
            raise ValueError(f"{source} lacks adapters for {len(missing)} modules (e.g. {missing[0]}): "
                             f"not made for this base")
        self.load_state_dict(weights, strict=True)
        self.to(getattr(torch, dtype))
        self.head = nn.Linear(int(c["hidden_size"]), int(state["head.weight"].shape[0]))  # fp32, as PairEncoder's
        self.head.load_state_dict({"weight": state["head.weight"], "bias": state["head.bias"]})
        self.eval().requires_grad_(False)
        self.tokenizer = bert_tokenizer(folder, config.max_length, int(c.get("pad_token_id") or 0))

    @torch.inference_mode()
    def probabilities(self, a: Sequence[str], b: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Per pair, in the order given (see ``PairEncoder.probabilities``)."""
        out = [np.zeros((0, self.head.out_features), np.float32)]
        for i in range(0, len(a), batch_size):
            encoded = self.tokenizer.encode_batch(list(zip(a[i:i + batch_size], b[i:i + batch_size])))
            ids, mask, types = (torch.tensor([getattr(e, f) for e in encoded])
                                for f in ("ids", "attention_mask", "type_ids"))
            pooled = mean_pool(self.states(ids, mask, types).float(), mask, floor=1.0)
            out.append(torch.softmax(self.head(pooled), dim=-1).numpy())
        return np.concatenate(out).astype(np.float32)
