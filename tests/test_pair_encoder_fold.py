"""The pair encoder infers with its adapters folded into the base weights (issue 32: a 64-memory write
spent most of its time here): the same probabilities, and a fresh fold once the adapters change."""

from __future__ import annotations

import numpy as np
import torch

from memgraft.collab.maintain.pair_encoder import load_pair_encoder

A = ["Team decision: the database migration tool is Flyway from now on.", "Lab meeting moves to Thursdays."]
B = ["Log: today's build used Liquibase as the database migration tool.", "The lab meeting is on Tuesdays."]


def _unfolded(model, a, b) -> np.ndarray:
    """The probabilities through the adapters themselves (the training path's encoder), dropout off."""
    with torch.no_grad():
        batch = model.tokenizer(a + b, b + a, truncation=True, max_length=model.config.max_length, padding=True,
                                return_tensors="pt")
        model.encoder.eval()
        hidden = model.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        p = torch.softmax(model.head((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)), -1).numpy()
    return (p[:len(a)] + p[len(a):]) / 2


def test_folded_inference_matches_the_adapters_and_follows_their_changes():
    model = load_pair_encoder("bundled")
    folded = model.probabilities(A, B)
    np.testing.assert_allclose(folded, _unfolded(model, A, B), atol=1e-5)
    assert not any("_folded" in k for k in model.state_dict())  # the copy is not saved with the adapters
    name, weight = next((n, p) for n, p in model.encoder.named_parameters() if "lora_B" in n)
    before = weight.detach().clone()
    try:
        with torch.no_grad():
            weight.add_(0.05)  # what an optimizer step does to an adapter
        changed = model.probabilities(A, B)
        assert not np.allclose(changed, folded, atol=1e-6), name  # not the stale fold
        np.testing.assert_allclose(changed, _unfolded(model, A, B), atol=1e-5)
    finally:
        with torch.no_grad():
            weight.copy_(before)  # the bundled encoder is shared in this process (load_pair_encoder caches it)
    np.testing.assert_allclose(model.probabilities(A, B), folded, atol=1e-6)
