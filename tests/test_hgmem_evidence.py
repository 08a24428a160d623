"""HGMem's evidence budget (issue 14): in the LLM's tokens, shared fairly by a step's subqueries, recorded."""

from __future__ import annotations

from memgraft.config import load_settings
from memgraft.hgmem.evidence import round_robin, show
from memgraft.hgmem.loop import HGMemReasoner
from memgraft.ids import entity_id, relation_id
from memgraft.hgmem.retrieval import Retrieved, Retriever, StepEvidence, Subquery
from memgraft.models.llm.session import LLMSession
from memgraft.models.llm.tokens import TokenizerCounter, token_counter
from tests.doubles import HGMemScript, ScriptedLLM


def counter(settings):
    return token_counter(settings.models.llm, str(settings.cache_path))


def test_budgets_are_counted_by_the_llms_tokenizer(settings):
    c = counter(settings)
    assert isinstance(c, TokenizerCounter)  # the bundled SmolLM2's own tokenizer, not an estimate
    digits = "3.14159265358979 2.71828182845904 1.41421356237309 " * 8
    assert c.count(digits) != -(-len(digits) // 4)  # numbers tokenise far from 4 characters a token
    cut = c.truncate(digits, 30)
    assert digits.startswith(cut.removesuffix(" …")) and c.count(cut) <= 32
    assert c.truncate("short text", 30) == "short text"


def test_the_bundled_llms_counter_is_its_tokenizer_without_transformers(settings):
    """The converted folder's tokenizer.json alone: transformers' tokens and cut points, in a process that never
    imports transformers (each question worker and ingress replica counts prompts)."""
    import subprocess
    import sys

    from transformers import AutoTokenizer

    from memgraft.models.llm.transformers_backend import ensure_hf_folder
    from tests.conftest import REPO

    theirs = AutoTokenizer.from_pretrained(str(ensure_hf_folder(settings.models.llm, settings.cache_path)))
    ours = counter(settings)
    texts = [" leading space", "trailing  ", "<|im_start|>user\nhi<|im_end|>", "ünïcödé, 東京 🙂", "\t tab\n\nlines",
             "3.14159 and 2.71828", "word " * 300, (REPO / "README.md").read_text()[:4000]]
    for text in texts:
        ids = theirs(text, add_special_tokens=False, return_offsets_mapping=True)
        assert ours.count(text) == len(ids["input_ids"])
        for n in (1, 7, 40):
            cut = text if len(ids["input_ids"]) <= n else text[:ids["offset_mapping"][n - 1][1]].rstrip() + " …"
            assert ours.truncate(text, n) == cut
    code = ("import sys; from memgraft.config import load_settings; from memgraft.models.llm.tokens import "
            "token_counter; s = load_settings('local'); c = token_counter(s.models.llm, str(s.cache_path)); "
            "print(type(c).__name__, c.count('hello world'), 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["TokenizerCounter", str(len(theirs("hello world", add_special_tokens=False)
                                                               ["input_ids"])), "False"], out.stderr[-2000:]


def test_every_subquery_shows_its_best_evidence_before_any_shows_its_next(world, settings):
    first = Retrieved(Subquery("a"), [], [], ["c0", "c1", "c2", "c3", "c4"])
    second = Retrieved(Subquery("b"), [], [], ["c6", "c7", "c8", "c9"])
    assert round_robin([first.chunk_ids, second.chunk_ids]) == ["c0", "c6", "c1", "c7", "c2", "c8", "c3", "c9", "c4"]
    c = counter(settings)
    shown = show(StepEvidence([first, second]), world, 80, c).blocks["chunks"]  # 40 tokens: a few short chunks
    assert shown.ids[:2] == ["c0", "c6"]  # the second subquery's best is not dropped for the first's tail
    assert 2 <= len(shown.ids) < 9 and shown.left_out == 9 - len(shown.ids)
    assert c.count(shown.text) <= shown.tokens <= 40


def test_each_evidence_mode_brings_its_own_top_chunks(world, settings):
    s = settings.model_copy(update={"hgmem": settings.hgmem.model_copy(update={"top_chunks": 1})})
    r = Retriever(world, s.hgmem)
    byron_greece = relation_id(*sorted((entity_id("Lord Byron"), entity_id("Greece"))))  # its chunk: c4
    got = r.chunks(Subquery("Ada Lovelace"), [entity_id("Ada Lovelace")], [byron_greece])
    assert got[1] == "c4" and got[0] in {"c0", "c3"} and len(got) == 2  # one per mode, top_chunks=1 each


def test_the_trace_says_what_was_retrieved_and_what_the_model_was_shown(world):
    s = load_settings("local", ["hgmem.max_step=2", "hgmem.top_entities=6", "hgmem.relations_per_entity=2",
                                "hgmem.top_chunks=4", "hgmem.evidence_tokens=200"])
    out = HGMemReasoner(world, LLMSession(ScriptedLLM(HGMemScript()), s.generation), s).run(
        "Who did Ada Lovelace work with?")
    left_out = 0
    for step in out.trace["steps"]:
        if "shown" not in step:
            continue
        retrieved = {c for sq in step["subqueries"] for c in sq["chunk_ids"]}
        assert set(step["shown"]["chunk_ids"]) <= retrieved and step["shown"]["tokens"]["chunks"] <= 100
        assert step["shown"]["tokens"]["entities"] <= 50
        left_out += sum(step["shown"]["left_out"].values())
    assert left_out > 0  # the budget was binding somewhere, and the trace says how much did not fit
    assert out.trace["answer"]["tokens_counted_by"] == s.models.llm
