"""The benchmark's stand-in LLM server (bench/standin_server.py) speaks what HGMem decodes.

Through the real OpenAI-compatible client, every one of HGMem's output models
comes back schema-valid (checked with the pydantic model itself), the stand-in's
answers drive the loop the way its docstring says, and HGMem's loop over the
session's small MuSiQue graph makes the 6 calls the benchmark's ideal assumes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from memgraft.hgmem import prompts
from memgraft.models.llm.base import ChatRequest, generate_structured, parse_json_as, schema_for
from memgraft.models.llm.openai_backend import OpenAICompatibleLLM

REPO = Path(__file__).resolve().parent.parent


def _standin_module():
    spec = importlib.util.spec_from_file_location("bench_standin_server", REPO / "bench" / "standin_server.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


standin = _standin_module()
DELAY = 0.2

def _prompt(template: str, memory: str) -> list[dict[str, str]]:
    fields = dict(question="Who designed the engine Ada Lovelace programmed?", memory=memory, max_concerns=3,
                  subqueries="'x'", entities="(none)", relations="(none)", chunks="(none)", graph="")
    if template in (prompts.EVOLVE, prompts.EVOLVE_INSERT_ONLY):
        fields.update(entities="- Ada Lovelace (person): wrote the first program\n"
                               "- Charles Babbage (person): designed the Analytical Engine")
    return prompts.messages(template, **fields)


TEMPLATES = {  # by schema title: the loop builds some models per call (point ids as an enum), same titles
    "SufficiencyJudgement": prompts.SUFFICIENCY,
    "Evolution": prompts.EVOLVE,
    "InsertOnly": prompts.EVOLVE_INSERT_ONLY,
    "Merging": prompts.MERGE,
    "Answer": prompts.ANSWER_FROM_MEMORY,
}
MEMORIES = ("(empty)",
            "[p1] Ada Lovelace wrote notes on the engine (entities: Ada Lovelace, Analytical Engine)\n"
            "[p2] merged: Babbage designed it (entities: Charles Babbage, Analytical Engine)\n"
            "[p3] Babbage lived in London (entities: Charles Babbage, London)")


@pytest.fixture(scope="module")
def server():
    with standin.Standin(DELAY, max_seconds=300) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    llm = OpenAICompatibleLLM(server.base_url, "standin", concurrency=16, retries=0)
    yield llm
    llm.close()


def test_every_hgmem_output_model_comes_back_schema_valid(client, server):
    models = prompts.all_output_models()  # every shape the loop decodes under (point ids p1..p3)
    assert {m.__name__ for m in models} == set(TEMPLATES)
    for model in models:
        for memory in MEMORIES:
            [res] = generate_structured(client, [_prompt(TEMPLATES[model.__name__], memory)], model, retries=0)
            assert res.ok, (model.__name__, memory, res.errors, res.text)
            assert isinstance(parse_json_as(model, res.text), model)
            assert res.prompt_tokens > 0 and res.completion_tokens > 0  # whitespace words, not model tokens
    assert server.stats()["by_schema"].keys() >= set(TEMPLATES)


def test_answers_drive_the_loop_as_documented(client):
    empty, one = "(empty)", "[p1] Ada Lovelace is linked to Charles Babbage. (entities: Ada Lovelace, Charles Babbage)"
    two = one + "\n[p2] Babbage built it. (entities: Charles Babbage, Analytical Engine)"

    def ask(model, template, memory):
        [res] = generate_structured(client, [_prompt(template, memory)], model, retries=0)
        return res.value

    judged = ask(prompts.SufficiencyJudgement, prompts.SUFFICIENCY, one)
    assert not judged.sufficient and len(judged.concerns) == 1 and judged.concerns[0].kind == "global"
    assert ask(prompts.SufficiencyJudgement, prompts.SUFFICIENCY, "[p3] merged: all of it (entities: A, B)").sufficient
    evolved = ask(prompts.Evolution, prompts.EVOLVE, empty)
    assert evolved.updates == [] and evolved.inserts[0].entities == ["Ada Lovelace", "Charles Babbage"]
    evolved = ask(prompts.Evolution, prompts.EVOLVE, one)  # names already in memory are not inserted again
    assert [u.point_id for u in evolved.updates] == ["p1"]
    assert "Ada Lovelace" not in evolved.inserts[0].entities
    merged = ask(prompts.Merging, prompts.MERGE, two)
    assert merged.merges[0].point_ids == ["p1", "p2"] and merged.merges[0].description.startswith("merged:")
    assert ask(prompts.Merging, prompts.MERGE, one).merges == []
    assert ask(prompts.Answer, prompts.ANSWER_FROM_MEMORY, one).answer == "Ada Lovelace"


def test_unknown_schemas_get_a_minimal_valid_instance(client):
    from pydantic import BaseModel, Field

    class Other(BaseModel):
        name: str = Field(min_length=3)
        tags: list[str] = Field(min_length=2)
        level: int = Field(ge=1)
        mode: str = "x"

    [res] = generate_structured(client, [[{"role": "user", "content": "anything"}]], Other, retries=0)
    assert res.ok, res.errors


def test_requests_run_concurrently():
    """Counted, not timed: the server answers only once all 16 wait at once (hold=16), so a client
    that sent them one by one would see each wait out the bound and a peak of 1."""
    request = ChatRequest(_prompt(prompts.ANSWER_FROM_MEMORY, "(empty)"), json_schema=schema_for(prompts.Answer))
    with standin.Standin(120.0, hold=16, max_seconds=600) as held:
        llm = OpenAICompatibleLLM(held.base_url, "standin", concurrency=16, retries=0, timeout_s=600)
        outs = llm.generate([request] * 16)
        llm.close()
        stats = held.stats()
    assert len(outs) == 16 and all(parse_json_as(prompts.Answer, o.text) for o in outs)
    assert stats["requests"] == 16 and stats["peak_waiting"] == 16


def test_stand_in_in_a_subprocess_stops_on_exit():
    with standin.Standin(0.0, process=True, max_seconds=60) as s:
        llm = OpenAICompatibleLLM(s.base_url, "standin", retries=0)
        [res] = generate_structured(llm, [_prompt(prompts.MERGE, "(empty)")], prompts.Merging, retries=0)
        assert res.ok
        llm.close()
        proc = s._proc
    assert proc is not None and proc.poll() is not None  # the server exited with the context


def test_hgmem_over_a_graph_takes_six_calls_and_naive_one(client, slice_graph, settings, embedder, tmp_path):
    from memgraft.graph.store import GraphStore
    from memgraft.hgmem.methods import answer_record

    store = GraphStore.load(str(slice_graph[0]), embedder)
    record = {"id": "q1", "question": "Who published the Journal of Mathematical Physics?"}
    row = answer_record(record, "hgmem", store, client, settings, tmp_path)
    assert row["error"] is None, row.get("traceback")
    assert row["llm_calls"] == 6 and row["steps"] == 3 and row["answer"]
    row = answer_record(record, "naive", store, client, settings, tmp_path)
    assert row["error"] is None and row["llm_calls"] == 1
