"""The bundled embedder through memgraft.models.bert: sentence-transformers' vectors, without its imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memgraft.models.bert import BertSentenceEncoder, plain_bert_folder
from memgraft.models.registry import resolve
from tests.conftest import REPO

FOLDER = Path(resolve("bundled:all-MiniLM-L6-v2"))
TEXTS = ["Deploys now happen on Thursdays instead of Tuesdays.", "  padded with spaces  ", "", "x",
         "ünïcödé, 東京 and an emoji 🙂", "word " * 400,  # past the 256-token window: truncated as sentence-transformers does
         "The owner of Pelican (Fabergé egg) is Lillian Thomas Pratt."] + [f"team memory number {i}" for i in range(40)]


def test_the_bundled_folder_is_plain_bert_and_loads_without_sentence_transformers():
    code = ("import sys; from memgraft.config import load_settings; from memgraft.models.embedder import load_embedder;"
            "e = load_embedder(load_settings('local')); v = e.encode(['a probe']);"
            "print(type(e._model).__name__, v.shape, 'sentence_transformers' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["BertSentenceEncoder", "(1,", "384)", "False", "False"], out.stdout


@pytest.mark.slow
def test_vectors_match_sentence_transformers_whatever_the_batch():
    from sentence_transformers import SentenceTransformer

    ours = BertSentenceEncoder(FOLDER)
    theirs = SentenceTransformer(str(FOLDER), device="cpu").encode(TEXTS, batch_size=8, normalize_embeddings=True,
                                                                   convert_to_numpy=True, show_progress_bar=False)
    for batch in (1, 8, 64):
        got = ours.encode(TEXTS, batch_size=batch, normalize_embeddings=True)
        assert got.dtype == np.float32 and got.shape == theirs.shape
        assert float(np.abs(got - theirs).max()) < 1e-5, batch
    assert ours.max_seq_length == 256 and ours.get_embedding_dimension() == 384


def _copy(tmp_path, change) -> str:
    """The bundled folder as links to its files (a changed file is written anew, never through its link)."""
    folder = tmp_path / "model"
    folder.mkdir()
    for item in FOLDER.iterdir():
        (folder / item.name).symlink_to(item, target_is_directory=item.is_dir())
    (folder / "1_Pooling").unlink()
    shutil.copytree(FOLDER / "1_Pooling", folder / "1_Pooling")
    change(folder)
    return str(folder)


def _write(path, text: str) -> None:
    path.unlink()
    path.write_text(text)


def _set(path, **values):
    _write(path, json.dumps({**json.loads(path.read_text()), **values}))


@pytest.mark.parametrize("change", [
    lambda f: _set(f / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False, pooling_mode_cls_token=True),
    lambda f: _set(f / "config.json", model_type="roberta"),
    lambda f: _set(f / "config.json", position_embedding_type="relative_key"),
    lambda f: _set(f / "sentence_bert_config.json", do_lower_case=True),
    lambda f: (f / "tokenizer.json").unlink(),
    lambda f: _write(f / "modules.json", json.dumps(json.loads((f / "modules.json").read_text())[:1])),
], ids=["cls-pooling", "not-bert", "relative-positions", "lower-cased", "no-tokenizer-json", "no-pooling"])
def test_any_other_folder_is_left_to_sentence_transformers(tmp_path, change):
    assert plain_bert_folder(FOLDER)
    assert not plain_bert_folder(_copy(tmp_path, change))


@pytest.mark.slow
def test_a_folder_of_another_shape_is_embedded_by_sentence_transformers(tmp_path):
    from sentence_transformers import SentenceTransformer

    from memgraft.models.embedder import SentenceTransformerEmbedder

    cls = _copy(tmp_path, lambda f: _set(f / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False,
                                          pooling_mode_cls_token=True))
    embedder = SentenceTransformerEmbedder(cls)
    assert isinstance(embedder._model, SentenceTransformer)
    plain = BertSentenceEncoder(FOLDER).encode(TEXTS[:3], normalize_embeddings=True)
    assert float(np.abs(embedder.encode(TEXTS[:3]) - plain).max()) > 1e-2  # its own pooling: other vectors
