"""Text embedders: a small protocol and the sentence-transformers backend."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from memgraft.config import Settings
from memgraft.models.registry import display_name, resolve
from memgraft.models.threads import set_torch_threads


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


class SentenceTransformerEmbedder:
    """sentence-transformers model loaded once, from a local path or (cluster) the hub; on a CPU, a local folder
    of plain BERT and mean pooling (the bundled default) loads through :mod:`memgraft.models.bert` instead.

    ``dtype="auto"`` loads the measured choice for this model and CPU
    (``memgraft.models.dtype``), probing once per machine into ``cache_path``.
    """

    def __init__(self, model: str, *, dtype: str = "float32", batch_size: int = 32, threads: int = 0,
                 cache_path: Path | None = None):
        import torch

        from memgraft.models.bert import BertSentenceEncoder, plain_bert_folder
        from memgraft.models.dtype import probe_sentence_transformer, resolve_dtype

        set_torch_threads(threads)
        self.name = display_name(model)
        path = resolve(model)
        if plain_bert_folder(path) and not torch.cuda.is_available():
            self._model = BertSentenceEncoder(path)  # the same vectors without importing sentence-transformers
        else:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(path, device="cpu" if not torch.cuda.is_available() else None)
        self.dtype = resolve_dtype(dtype, model=model, cache_path=cache_path or _default_cache(),
                                   probe=lambda: probe_sentence_transformer(self._model), unit="texts/s")
        if self.dtype == "bfloat16":
            self._model = self._model.to(torch.bfloat16)
        self.batch_size = batch_size
        self.dim = int(self._model.get_embedding_dimension())
        self.max_seq_length = int(self._model.max_seq_length)

    @classmethod
    def from_settings(cls, settings: Settings) -> "SentenceTransformerEmbedder":
        m = settings.models
        return cls(m.embedder, dtype=m.embedder_dtype, batch_size=m.embed_batch_size, threads=m.torch_threads,
                   cache_path=settings.cache_path)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        # sentence-transformers sorts each call's texts by length before batching,
        # so callers should pass large lists: padding then stays close to the text.
        vecs = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)


def _default_cache() -> Path:
    return Settings().cache_path


def load_embedder(settings: Settings) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder.from_settings(settings)


class FastTokenizer:
    """A model's ``tokenizer.json`` through the ``tokenizers`` library alone, called as transformers'
    tokenizers are (``input_ids``, ``offset_mapping``): the same Rust tokenizer their fast tokenizers
    wrap, so the same tokens and offsets, without importing transformers and torch, which cost 2 s in
    each fresh Ray worker that chunks (8 of them on 2 cores, a third of the MuSiQue chunk stage)."""

    def __init__(self, path: Path):
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()  # chunking counts every token of a document
        self._tokenizer.no_padding()

    def __call__(self, text: str, add_special_tokens: bool = True, return_offsets_mapping: bool = False,
                 verbose: bool = True) -> dict[str, list]:
        enc = self._tokenizer.encode(text, add_special_tokens=add_special_tokens)
        out: dict[str, list] = {"input_ids": list(enc.ids)}
        if return_offsets_mapping:
            out["offset_mapping"] = [tuple(o) for o in enc.offsets]
        return out


def load_tokenizer(model: str):
    """The embedder's own tokenizer (chunk windows are counted in its tokens): its ``tokenizer.json``
    where the model folder has one (:class:`FastTokenizer`), else transformers' (a hub name)."""
    path = Path(resolve(model)) / "tokenizer.json"
    if path.is_file():
        return FastTokenizer(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve(model))
