import pytest

from memgraft.ids import chunk_id
from memgraft.text.chunking import chunk_batch, chunk_text, window_starts


def test_window_starts_stride_150():
    assert window_starts(0, 200, 50) == []
    assert window_starts(120, 200, 50) == [0]
    assert window_starts(200, 200, 50) == [0]
    assert window_starts(201, 200, 50) == [0, 150]
    assert window_starts(1000, 200, 50) == [0, 150, 300, 450, 600, 750, 900]
    assert window_starts(950, 200, 50) == [0, 150, 300, 450, 600, 750]
    with pytest.raises(ValueError):
        window_starts(10, 50, 50)


def test_windows_are_exact_on_a_known_text(tokenizer):
    # "w0 w1 ..." tokenises to a known count per word; build the text and check the windows.
    text = " ".join(f"alpha{i}" for i in range(400))
    n = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    chunks = list(chunk_text(tokenizer, "doc", text, 200, 50))
    assert [c.token_start for c in chunks] == window_starts(n, 200, 50)
    assert all(c.n_tokens == 200 for c in chunks[:-1])
    assert 0 < chunks[-1].n_tokens <= 200 and chunks[-1].token_end == n
    for a, b in zip(chunks, chunks[1:]):
        assert b.token_start - a.token_start == 150  # 50 tokens shared
        assert a.token_end - b.token_start == 50
    for c in chunks:
        assert text[c.char_start:c.char_end] == c.text
        assert len(tokenizer(c.text, add_special_tokens=False)["input_ids"]) == c.n_tokens


def test_offsets_map_back_with_unicode_and_whitespace(tokenizer):
    text = "  Café Müller —  naïve résumé\n\n" * 60
    chunks = list(chunk_text(tokenizer, "d", text, 50, 10))
    assert len(chunks) > 3
    for c in chunks:
        assert text[c.char_start:c.char_end] == c.text and c.text.strip() == c.text


def test_ids_are_deterministic_content_hashes(tokenizer):
    text = "The quick brown fox. " * 100
    a = [c.chunk_id for c in chunk_text(tokenizer, "d", text)]
    b = [c.chunk_id for c in chunk_text(tokenizer, "d", text)]
    assert a == b and len(set(a)) == len(a)
    assert a[0] == chunk_id("d", 0, next(chunk_text(tokenizer, "d", text)).text)
    assert a != [c.chunk_id for c in chunk_text(tokenizer, "other", text)]


def test_chunk_batch_flattens_documents(tokenizer):
    out = chunk_batch(tokenizer, {"doc_id": ["a", "b"], "text": ["short one", "word " * 500]}, 200, 50)
    assert out["doc_id"].count("a") == 1 and out["doc_id"].count("b") == 3  # 500 tokens: windows at 0, 150, 300
    assert out["n_tokens"][0] == 2


def test_the_chunk_tokenizer_is_transformers_own_without_importing_it(settings):
    """Chunk windows are counted by the tokenizer.json alone (the `tokenizers` library): the same tokens and
    offsets as transformers' tokenizer of the model, and a fresh Ray worker that chunks imports neither
    transformers nor torch (2 s each; 8 chunk workers took a third of the MuSiQue chunk stage on 2 cores)."""
    import subprocess
    import sys

    from transformers import AutoTokenizer

    from memgraft.models.embedder import FastTokenizer, load_tokenizer
    from memgraft.models.registry import resolve

    fast = load_tokenizer(settings.models.embedder)
    assert isinstance(fast, FastTokenizer)
    reference = AutoTokenizer.from_pretrained(resolve(settings.models.embedder))
    for text in ["word " * 700, "Ünïcödé — “quotes” 𝔘𝔫𝔦 \u200b and a URL https://x.org/a?b=1", "", "Émile Zola's J'accuse…!"]:
        ours = fast(text, add_special_tokens=False, return_offsets_mapping=True)
        theirs = reference(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        assert ours["input_ids"] == theirs["input_ids"]
        assert [tuple(o) for o in ours["offset_mapping"]] == [tuple(o) for o in theirs["offset_mapping"]]
    code = ("import sys; from memgraft.models.embedder import load_tokenizer; from memgraft.text.chunking import "
            f"chunk_batch; chunk_batch(load_tokenizer({settings.models.embedder!r}), "
            "{'doc_id': ['d'], 'text': ['some words ' * 300]}, 200, 50); "
            "print(sorted(m for m in ('transformers', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
