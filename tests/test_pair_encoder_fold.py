"""The pair judge's second opinion costs what a write can bear (issue 32: a 64-memory write spent most of
its time here): the encoder infers with its adapters folded into the base weights (the same probabilities,
and a fresh fold once the adapters change), and ``hicomer.judge_encoder_max_pairs`` caps the pairs it reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from memgraft.collab.maintain.judge import JudgePolicy
from memgraft.collab.maintain.pair_encoder import inference_dtype, load_pair_encoder, load_trainable_pair_encoder

A = ["Team decision: the database migration tool is Flyway from now on.", "Lab meeting moves to Thursdays."]
B = ["Log: today's build used Liquibase as the database migration tool.", "The lab meeting is on Tuesdays."]


def _unfolded(model, a, b) -> np.ndarray:
    """The probabilities through the adapters themselves (the training path's encoder), dropout off."""
    with torch.no_grad():
        batch = model.tokenizer(a, b, truncation=True, max_length=model.config.max_length, padding=True,
                                return_tensors="pt")
        model.encoder.eval()
        hidden = model.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return torch.softmax(model.head((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)), -1).numpy()


def test_folded_inference_matches_the_adapters_and_follows_their_changes():
    model = load_trainable_pair_encoder("bundled")
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
            weight.copy_(before)
    np.testing.assert_allclose(model.probabilities(A, B), folded, atol=1e-6)


def test_the_loaded_encoder_folds_its_adapters_without_peft_or_transformers(tmp_path):
    """What the updater and the embedder replica load: the adapters' probabilities, in a process that imports
    neither peft nor transformers; a file missing an adapter is refused, as a trainable load refuses it."""
    import subprocess
    import sys

    from memgraft.collab.maintain.pair_encoder import BUNDLED, FORMAT
    from memgraft.collab.maintain.weights import read_weights, save_weights
    from tests.conftest import REPO

    a, b = A + ["The owner of Pelican (Fabergé egg) is Lillian Thomas Pratt. " * 8, ""], B + ["x", "word " * 90]
    adapters = load_trainable_pair_encoder("bundled").probabilities(a, b)
    loaded = load_pair_encoder("bundled")
    assert type(loaded).__name__ == "FoldedPairEncoder"
    np.testing.assert_allclose(loaded.probabilities(a, b), adapters, atol=1e-5)
    code = ("import sys; from memgraft.collab.maintain.pair_encoder import load_pair_encoder; "
            f"p = load_pair_encoder('bundled').probabilities({A!r}, {B!r}); "
            "print(p.shape, 'peft' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["(2,", "3)", "False", "False"], out.stderr[-2000:]
    blob = read_weights(BUNDLED, FORMAT)
    lacking = {k: v for k, v in blob["state"].items() if "layer.3.intermediate" not in k}
    save_weights(tmp_path / "lacking.pt", FORMAT, blob["config"], lacking, None)
    with pytest.raises(ValueError, match="lacks adapters for 1 modules .*layer.3.intermediate.dense"):
        load_pair_encoder(tmp_path / "lacking.pt")


class CountingEncoder:
    def __init__(self):
        self.asked: list[str] = []

    def probabilities(self, a, b):
        self.asked += list(a)
        return np.tile(np.array([[0.0, 0.0, 1.0]], np.float32), (len(a), 1))


def test_the_second_opinion_reads_at_most_max_pairs_the_most_doubtful_first(settings):
    probs = np.array([[0.9, 0.08, 0.02], [0.3, 0.2, 0.5], [0.2, 0.1, 0.7], [0.5, 0.4, 0.1], [0.0, 0.55, 0.45]],
                     np.float32)
    texts = [f"t{i}" for i in range(len(probs))]
    capped = CountingEncoder()
    h = settings.hicomer.model_copy(update={"judge_encoder_max_pairs": 2})
    out = JudgePolicy.from_settings(None, h, second=capped).blend(texts, texts, probs)
    assert capped.asked == ["t1", "t4"]  # P(contradiction) 0.50 and 0.45: nearest the 0.5 threshold; t0 not in doubt
    assert np.allclose(out[[0, 2, 3]], probs[[0, 2, 3]]) and out[1, 2] > probs[1, 2] and out[4, 2] > probs[4, 2]
    every = CountingEncoder()
    JudgePolicy.from_settings(None, settings.hicomer, second=every).blend(texts, texts, probs)
    assert settings.hicomer.judge_encoder_max_pairs == 0 and every.asked == ["t1", "t2", "t3", "t4"]


def test_bf16_inference_is_a_second_instance_close_to_fp32_and_leaves_fp32_unchanged():
    """``hicomer.judge_encoder_dtype=bfloat16``: its own cached instance (the fp32 one keeps its exact fold),
    probabilities near fp32's and the same reading of each pair."""
    exact = load_pair_encoder("bundled")
    before = exact.probabilities(A, B)
    half = load_pair_encoder("bundled", "bfloat16")
    assert half is not exact and load_pair_encoder("bundled", "bfloat16") is half
    p = half.probabilities(A, B)
    assert p.dtype == np.float32 and np.allclose(p.sum(1), 1.0, atol=1e-5)
    np.testing.assert_allclose(p, before, atol=2e-2)
    assert (p.argmax(1) == before.argmax(1)).all()
    np.testing.assert_allclose(exact.probabilities(A, B), before, atol=1e-6)


def test_an_explicit_dtype_is_never_probed(tmp_path):
    assert inference_dtype("float32", tmp_path) == "float32" and inference_dtype("bfloat16", tmp_path) == "bfloat16"
    assert not any(tmp_path.iterdir())  # no probe ran, nothing cached
