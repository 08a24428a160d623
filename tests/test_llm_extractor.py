"""The LLM extractor with a scripted model, its parser, and the Ray processor's
pre/post-processing (called directly, without Ray or vLLM)."""

from __future__ import annotations

import json

import pytest

from memgraft.config import Settings
from memgraft.graph.extraction import ENTITY_TYPES, Extractor, extract_batch
from memgraft.graph.llm_extractor import (
    ExtractionOutput,
    LLMExtractor,
    build_messages,
    extraction_model,
    parse_extraction,
)
from tests.doubles import ScriptedLLM

GOOD = json.dumps({
    "entities": [
        {"name": "Marie Curie", "type": "person", "description": "A physicist."},
        {"name": "University of Paris", "type": "organization", "description": "Where she worked."},
    ],
    "relations": [
        {"source": "Marie Curie", "target": "university of paris", "description": "She worked there.", "strength": 8},
    ],
})
OTHER = json.dumps({"entities": [{"name": "Berlin", "type": "geo", "description": "A city."}], "relations": []})


def _settings(**generation: object) -> Settings:
    settings = Settings()
    for key, value in generation.items():
        setattr(settings.generation, key, value)
    return settings


def test_valid_output_becomes_mentions() -> None:
    llm = ScriptedLLM([GOOD])
    extractor = LLMExtractor(llm, _settings())
    assert isinstance(extractor, Extractor) and extractor.name == "llm:scripted"
    [ext] = extractor.extract(["Marie Curie worked at the University of Paris."])
    assert ext.error is None
    assert [(e.name, e.type) for e in ext.entities] == [("Marie Curie", "person"), ("University of Paris", "organization")]
    [rel] = ext.relations
    assert (rel.source, rel.target, rel.strength) == ("Marie Curie", "University of Paris", 8.0)  # endpoint canonicalised
    assert ext.prompt_tokens > 0 and ext.completion_tokens == len(GOOD.split())
    [req] = llm.requests
    assert req.json_schema == ExtractionOutput.model_json_schema()
    assert req.max_new_tokens == Settings().extraction.llm_max_new_tokens
    assert "Marie Curie worked" in req.messages[-1]["content"]


def test_invalid_then_valid_is_retried() -> None:
    llm = ScriptedLLM(['{"entities": [{"name": "X", "type": "planet", "description": ""}], "relations": []}', GOOD, OTHER])
    extractor = LLMExtractor(llm, _settings(json_retries=2))
    first, second = extractor.extract(["text one", "text two"])
    assert [len(c) for c in llm.calls] == [2, 1]
    assert first.error is None and first.entities[0].name == "Berlin"  # its second answer
    assert second.error is None and second.entities[0].name == "Marie Curie"
    one_prompt = sum(len(m["content"].split()) for m in llm.requests[0].messages)
    assert first.prompt_tokens == 2 * one_prompt  # both attempts counted


def test_always_invalid_is_an_error_not_a_guess() -> None:
    llm = ScriptedLLM(lambda req: '{"entities": [')
    extractor = LLMExtractor(llm, _settings(json_retries=1))
    [ext] = extractor.extract(["some text"])
    assert ext.entities == [] and ext.relations == []
    assert ext.error is not None and "after 2 attempts" in ext.error
    assert len(llm.calls) == 2 and ext.completion_tokens == 4


def test_blank_chunks_skip_the_model() -> None:
    llm = ScriptedLLM([OTHER])
    results = LLMExtractor(llm, _settings()).extract(["  ", "Berlin is a city.", ""])
    assert len(llm.requests) == 1
    assert [len(r.entities) for r in results] == [0, 1, 0]
    assert all(r.error is None for r in results)


def test_extract_batch_columns_with_llm_extractor() -> None:
    llm = ScriptedLLM([GOOD])
    out = extract_batch(LLMExtractor(llm, _settings()), {"chunk_id": ["c1"], "text": ["Marie Curie ..."]})
    assert out["chunk_id"] == ["c1"] and out["extract_error"] == [""]
    assert out["entities"][0][0] == {"name": "Marie Curie", "type": "person", "description": "A physicist."}
    assert out["extract_tokens"][0] > 0


def test_missing_endpoints_become_concepts_and_duplicates_merge() -> None:
    text = json.dumps({
        "entities": [
            {"name": "Ada Lovelace", "type": "person", "description": "A mathematician."},
            {"name": "ada lovelace", "type": "role", "description": "Wrote the first program."},
        ],
        "relations": [
            {"source": "Ada Lovelace", "target": "Analytical Engine", "description": "She wrote for it.", "strength": 9.5},
            {"source": "Ada Lovelace", "target": "Ada Lovelace", "description": "herself", "strength": 1},
        ],
    })
    ext = parse_extraction(text)
    assert ext.error is None
    ada, engine = ext.entities
    assert (ada.type, ada.description) == ("person", "A mathematician. Wrote the first program.")
    assert (engine.name, engine.type, engine.description) == ("Analytical Engine", "concept", "She wrote for it.")
    assert len(ext.relations) == 1 and ext.relations[0].strength == 9.5  # the self-relation is dropped


@pytest.mark.parametrize("bad", [
    "not json at all",
    '{"entities": [], "relations": [{"source": "a", "target": "b", "description": "", "strength": 11}]}',
    '{"entities": [{"name": "a", "type": "alien", "description": ""}], "relations": []}',
    '{"entities": [], "relations": [], "extra": 1}',
    '{"entities": []}',
])
def test_parse_extraction_rejects_what_the_schema_forbids(bad: str) -> None:
    ext = parse_extraction(bad)
    assert ext.error and ext.entities == [] and ext.relations == []


def test_schema_follows_entity_types_and_bounds() -> None:
    schema = ExtractionOutput.model_json_schema()
    assert schema["$defs"]["EntityOutput"]["properties"]["type"]["enum"] == list(ENTITY_TYPES)
    assert schema["additionalProperties"] is False
    custom = extraction_model(("person", "drug"), max_entities=3)
    cschema = custom.model_json_schema()
    assert cschema["$defs"]["EntityOutput"]["properties"]["type"]["enum"] == ["person", "drug"]
    assert cschema["properties"]["entities"]["maxItems"] == 3
    assert extraction_model(("person", "drug"), max_entities=3) is custom  # built once
    ok = '{"entities": [{"name": "aspirin", "type": "drug", "description": ""}], "relations": []}'
    assert parse_extraction(ok, ("person", "drug")).entities[0].type == "drug"
    assert parse_extraction(ok).error  # "drug" is not a default type

    settings = Settings()
    settings.extraction.entity_types = ["person", "drug"]
    llm = ScriptedLLM([ok])
    [ext] = LLMExtractor(llm, settings).extract(["Aspirin."])
    assert ext.entities[0].type == "drug"
    assert llm.requests[0].json_schema["$defs"]["EntityOutput"]["properties"]["type"]["enum"] == ["person", "drug"]
    assert "person, drug" in llm.requests[0].messages[0]["content"]


def test_build_messages() -> None:
    system, user = build_messages("  Rome is in Italy.  ")
    assert system["role"] == "system" and user["role"] == "user"
    assert all(t in system["content"] for t in ENTITY_TYPES)
    assert '"""\nRome is in Italy.\n"""' in user["content"]


# -- the Ray Data processor's row functions, called directly ------------------------------


def test_processor_rows_match_extract_batch_columns() -> None:
    from pipelines.llm_extract_processor import make_postprocess, make_preprocess

    settings = Settings()
    row = {"chunk_id": "c1", "doc_id": "d", "text": "Marie Curie worked in Paris."}
    pre = make_preprocess(settings)(row)
    assert pre["messages"] == build_messages(row["text"], settings)
    sampling = pre["sampling_params"]
    assert json.loads(sampling["structured_outputs"]["json"]) == ExtractionOutput.model_json_schema()
    assert sampling["max_tokens"] == settings.extraction.llm_max_new_tokens
    assert sampling["temperature"] == settings.generation.temperature

    engine_row = {**pre, "prompt": "...", "generated_text": GOOD, "num_input_tokens": 40,
                  "num_generated_tokens": 60, "generated_tokens": [1, 2], "time_taken_llm": 0.1, "batch_uuid": "u"}
    post = make_postprocess(settings)(engine_row)
    expected = extract_batch(LLMExtractor(ScriptedLLM([GOOD]), settings), {k: [v] for k, v in row.items()})
    assert set(post) == set(expected)
    assert post["entities"] == expected["entities"][0] and post["relations"] == expected["relations"][0]
    assert post["extract_error"] == "" and post["extract_tokens"] == 100

    cut = make_postprocess(settings)({**engine_row, "generated_text": GOOD[:50]})
    assert cut["entities"] == [] and "ExtractionOutput" in cut["extract_error"]
    failed = make_postprocess(settings)({**engine_row, "__inference_error__": "engine died"})
    assert failed["extract_error"] == "inference failed: engine died"
