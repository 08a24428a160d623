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
