"""LLM backends: structured generation's retry logic, the transformers backend on the
bundled SmolLM2, and the OpenAI-compatible client against a real local HTTP server."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Literal

import pytest
from pydantic import BaseModel

from memgraft.config import Settings
from memgraft.models.llm.base import ChatRequest, Completion, generate_structured, schema_for
from memgraft.models.llm.openai_backend import LLMServerError, OpenAICompatibleLLM, chat_completions_url
from memgraft.models.llm.salvage import salvage
from tests.doubles import ScriptedLLM

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class Point(BaseModel):
    x: int
    y: int


class YesNo(BaseModel):
    answer: Literal["yes", "no"]


ASK = [[{"role": "user", "content": "a point please"}]]


# -- generate_structured ------------------------------------------------------------


def test_structured_valid_first_time() -> None:
    llm = ScriptedLLM(['{"x": 1, "y": 2}'])
    [res] = generate_structured(llm, ASK, Point, retries=2, max_new_tokens=50, temperature=0.0)
    assert res.ok and res.value == Point(x=1, y=2)
    assert res.attempts == 1 and res.errors == []
    assert res.prompt_tokens == 3 and res.completion_tokens == 4
    [req] = llm.requests
    assert req.json_schema == schema_for(Point)
    assert req.max_new_tokens == 50 and req.temperature == 0.0


def test_structured_retries_only_the_failures_and_sums_tokens() -> None:
    llm = ScriptedLLM(['{"x": 1, "y": 2}', "not json", '{"x": "a", "y": 0}', '{"x": 3, "y": 4}', '{"x": 5, "y": 6}'])
    asks = ASK * 3
    results = generate_structured(llm, asks, Point, retries=2)
    assert [len(c) for c in llm.calls] == [3, 2]  # round 2 re-asks only the two failures
    assert [r.value for r in results] == [Point(x=1, y=2), Point(x=3, y=4), Point(x=5, y=6)]
    assert [r.attempts for r in results] == [1, 2, 2]
    assert results[1].prompt_tokens == 6  # both attempts counted
    assert len(results[1].errors) == 1 and "Point" in results[1].errors[0]


def test_structured_gives_up_after_retries_without_guessing() -> None:
    llm = ScriptedLLM(lambda req: '{"x": 1')  # always cut short
    [res] = generate_structured(llm, ASK, Point, retries=2)
    assert not res.ok and res.value is None
    assert res.attempts == 3 and len(res.errors) == 3 and len(llm.calls) == 3
    assert res.text == '{"x": 1'


def test_structured_names_the_token_limit() -> None:
    llm = ScriptedLLM([Completion('{"x": 1, "y"', 5, 7, "length")])
    [res] = generate_structured(llm, ASK, Point, retries=0)
    assert not res.ok and res.completion_tokens == 7
    assert "token limit" in res.errors[0]


def test_a_reply_cut_at_the_token_limit_is_asked_again_for_a_shorter_one() -> None:
    cut = Completion('{"x": 1, "y"', 5, 50, "length")
    llm = ScriptedLLM([cut, cut, '{"x": 1, "y": 2}'])
    [res] = generate_structured(llm, ASK, Point, retries=2, max_new_tokens=50)
    assert res.ok and res.attempts == 3 and len(res.errors) == 2
    first, second, third = (r.messages[-1]["content"] for r in llm.requests)
    assert first == "a point please" and ASK[0][0]["content"] == "a point please"  # the caller's list is not touched
    assert second.startswith("a point please") and "past the 50-token limit" in second
    assert third == second  # said once, however often it was cut
    llm = ScriptedLLM(["not json", '{"x": 1, "y": 2}'])
    generate_structured(llm, ASK, Point, retries=1)
    assert llm.requests[1].messages == ASK[0]  # a reply that is wrong, not cut, is asked again as it was


class Item(BaseModel):
    name: str
    tags: list[str]


class Items(BaseModel):
    items: list[Item]
    note: str = ""


def test_a_reply_still_cut_after_the_retries_keeps_the_items_it_closed() -> None:
    cut = Completion('{"items": [{"name": "a", "tags": ["x"]}, {"name": "b", "tags": []}, {"name": "c", "ta', 5, 50,
                     "length")
    [res] = generate_structured(ScriptedLLM([cut, cut]), ASK, Items, retries=1, max_new_tokens=50)
    assert res.ok and res.salvaged and res.attempts == 2 and len(res.errors) == 2  # the retry came first
    assert res.value == Items(items=[Item(name="a", tags=["x"]), Item(name="b", tags=[])])  # "c" was cut: dropped
    [res] = generate_structured(ScriptedLLM([cut]), ASK, Items, retries=0, salvage_cut=False)
    assert not res.ok and not res.salvaged  # the setting off: the call fails as before
    [res] = generate_structured(ScriptedLLM(['{"items": [{"name": "a", "tags": []}, {"name": "c", "ta']), ASK, Items,
                                retries=0)
    assert not res.ok  # not cut by the limit (finish "stop"): a wrong reply is never patched


def test_salvage_never_guesses_what_the_cut_did_not_reach() -> None:
    assert salvage(Items, '{"items": [{"name": "a", "ta') is None  # the only item was cut: no empty answer
    assert salvage(Point, '{"x": 1, "y"') is None  # a required field never written
    assert salvage(YesNo, '{"answer": "ye') is None  # a half-written string is not kept
    assert salvage(Items, '{"items": [{"name": "a"}, {"name": "b", "tags": []}, {"na') is None  # an earlier bad item
    got = salvage(Items, '{"items": [{"name": "a", "tags": ["x", "y"]}], "note": "half a sen')
    assert got == Items(items=[Item(name="a", tags=["x", "y"])], note="")  # the cut note left out, not half kept
    assert salvage(Items, "not json at all") is None
    assert salvage(Items, '{"items": [') is None  # cut as the list opened: not an empty answer
    got = salvage(Items, '{"items": [{"name": "a", "tags": []}, {"name": "b", "tags": [')
    assert got == Items(items=[Item(name="a", tags=[])])  # "b" was open when cut: dropped, "a"'s closed [] kept


def test_a_salvaged_answer_is_counted_in_the_session_usage() -> None:
    from memgraft.config import GenerationSettings
    from memgraft.models.llm.session import LLMSession

    cut = Completion('{"items": [{"name": "a", "tags": []}, {"name": "b"', 5, 50, "length")
    session = LLMSession(ScriptedLLM([cut, cut, cut]), GenerationSettings(max_new_tokens=50))
    assert session.ask(Items, ASK[0], "test") == Items(items=[Item(name="a", tags=[])])
    assert (session.usage.calls, session.usage.salvaged) == (3, 1)


# -- OpenAI-compatible backend against a real local server ----------------------------


class _Server:
    """A stdlib HTTP server on 127.0.0.1 answering chat completions from a handler function."""

    def __init__(self, answer: Callable[[dict[str, Any], int], tuple[int, dict[str, Any]]]):
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    outer.bodies.append(body)
                    outer.headers.append(dict(self.headers))
                    outer.paths.append(self.path)
                    n = len(outer.bodies)
                status, payload = answer(body, n)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "_Server":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _chat_answer(content: str, prompt_tokens: int = 11, completion_tokens: int = 5, finish: str = "stop") -> dict:
    return {
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def test_chat_completions_url_forms() -> None:
    assert chat_completions_url("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"


def test_openai_backend_sends_schema_and_reads_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        text = body["messages"][-1]["content"]
        return 200, _chat_answer(json.dumps({"x": len(text), "y": n}), prompt_tokens=len(text), completion_tokens=9)

    monkeypatch.setenv("MEMGRAFT_TEST_KEY", "sekrit")
    with _Server(answer) as server:
        settings = Settings()
        settings.models.llm_backend = "openai"
        settings.models.llm = "Qwen/Qwen2.5-32B-Instruct"
        settings.models.llm_base_url = server.url
        settings.models.llm_api_key_env = "MEMGRAFT_TEST_KEY"
        from memgraft.models.llm import load_llm

        llm = load_llm(settings)
        assert isinstance(llm, OpenAICompatibleLLM)
        asks = [[{"role": "user", "content": "a" * k}] for k in (1, 2, 3, 4, 5)]
        results = generate_structured(llm, asks, Point, max_new_tokens=64, temperature=0.0)
        llm.close()
    assert [r.value.x for r in results if r.value] == [1, 2, 3, 4, 5]  # order kept across threads
    assert [r.prompt_tokens for r in results] == [1, 2, 3, 4, 5]
    assert all(r.completion_tokens == 9 for r in results)
    body = server.bodies[0]
    assert server.paths[0] == "/v1/chat/completions"
    assert body["model"] == "Qwen/Qwen2.5-32B-Instruct"
    assert body["max_tokens"] == 64 and body["temperature"] == 0.0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == schema_for(Point)
    assert fmt["json_schema"]["strict"] is True and fmt["json_schema"]["name"] == "Point"
    assert server.headers[0]["Authorization"] == "Bearer sekrit"


def test_openai_backend_retries_server_errors_and_reports_length() -> None:
    def answer(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        if n == 1:
            return 503, {"error": "warming up"}
        return 200, _chat_answer("partial", 3, 8, finish="length")

    with _Server(answer) as server:
        llm = OpenAICompatibleLLM(server.url, "m", retries=2, backoff_s=0.01)
        [out] = llm.generate([ChatRequest([{"role": "user", "content": "hi"}])])
    assert out == Completion("partial", 3, 8, "length")
    assert len(server.bodies) == 2
    assert "response_format" not in server.bodies[0]


def test_openai_backend_failure_names_the_url() -> None:
    with _Server(lambda body, n: (500, {"error": "boom"})) as server:
        llm = OpenAICompatibleLLM(server.url, "m", retries=1, backoff_s=0.01)
        with pytest.raises(LLMServerError, match=r"127\.0\.0\.1.*2 attempts.*500"):
            llm.generate([ChatRequest([{"role": "user", "content": "hi"}])])
    with _Server(lambda body, n: (400, {"error": "bad schema"})) as server:
        llm = OpenAICompatibleLLM(server.url, "m", retries=3, backoff_s=0.01)
        with pytest.raises(LLMServerError, match="rejected.*400.*bad schema"):
            llm.generate([ChatRequest([{"role": "user", "content": "hi"}])])
        assert len(server.bodies) == 1  # a 4xx is not retried
    closed = OpenAICompatibleLLM(server.url, "m", retries=1, backoff_s=0.01, timeout_s=2)  # server gone
    with pytest.raises(LLMServerError, match=r"127\.0\.0\.1.*Connection refused"):
        closed.generate([ChatRequest([{"role": "user", "content": "hi"}])])


def test_openai_backend_needs_a_url() -> None:
    settings = Settings()
    settings.models.llm_backend = "openai"
    with pytest.raises(ValueError, match="llm_base_url"):
        OpenAICompatibleLLM.from_settings(settings)


# -- transformers backend ---------------------------------------------------------------


def test_atomic_folder_write_keeps_the_first_complete_copy(tmp_path: Path) -> None:
    from memgraft.models.llm.transformers_backend import _MARKER, _atomic_write_dir

    def writer(tag: str) -> Callable[[Path], None]:
        def write(folder: Path) -> None:
            (folder / "weights").write_text(tag)
            (folder / _MARKER).write_text("{}")
        return write

    final = tmp_path / "models" / "m"
    _atomic_write_dir(final, writer("first"))
    _atomic_write_dir(final, writer("second"))  # lost the race: its copy is dropped
    assert (final / "weights").read_text() == "first"
    assert [p.name for p in final.parent.iterdir()] == ["m"]  # no temp folders left

    def broken(folder: Path) -> None:
        (folder / "half").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        _atomic_write_dir(tmp_path / "models" / "other", broken)
    assert not (tmp_path / "models" / "other").exists()
    assert [p.name for p in final.parent.iterdir()] == ["m"]


def test_non_bundled_models_pass_through(tmp_path: Path) -> None:
    from memgraft.models.llm.transformers_backend import ensure_hf_folder

    assert ensure_hf_folder("/some/model/folder", tmp_path) == Path("/some/model/folder")
    assert not (tmp_path / "models").exists()


@pytest.fixture(scope="module")
def smollm():
    from memgraft.models.llm.transformers_backend import TransformersLLM

    settings = Settings()
    settings.models.llm_batch_size = 2
    return TransformersLLM.from_settings(settings)


@pytest.mark.slow
def test_smollm_batch_is_schema_valid_with_exact_token_counts(smollm) -> None:
    from memgraft.graph.llm_extractor import build_messages, extraction_model

    # The extraction schema with bounds tight enough that even a model that
    # repeats itself must close the JSON within the small token budget.
    model = extraction_model(max_entities=2, max_relations=1, max_name_chars=40, max_description_chars=60)
    schema = model.model_json_schema()
    texts = [
        "Marie Curie was a physicist who worked in Paris at the University of Paris.",
        "The Treaty of Versailles was signed in 1919 by Germany and France.",
    ]
    requests = [ChatRequest(build_messages(t), json_schema=schema, max_new_tokens=200, temperature=0.0) for t in texts]
    outs = smollm.generate(requests)
    assert len(outs) == 2
    tok = smollm.tokenizer
    for req, out in zip(requests, outs):
        parsed = model.model_validate_json(out.text)  # raises if not schema-valid
        assert parsed.entities, out.text
        assert out.finish_reason == "stop"
        prompt = tok.apply_chat_template(req.messages, tokenize=False, add_generation_prompt=True)
        assert out.prompt_tokens == len(tok(prompt, add_special_tokens=False)["input_ids"])
        # Constrained decoding may pick a non-canonical split, so re-tokenizing is only close.
        assert 0 < out.completion_tokens <= 200
        retokenized = len(tok(out.text, add_special_tokens=False)["input_ids"]) + 1  # + the end token
        assert abs(out.completion_tokens - retokenized) <= max(3, retokenized // 10)
    assert outs[0].prompt_tokens != outs[1].prompt_tokens  # rows of one padded batch, counted apart


@pytest.mark.slow
def test_completion_counts_stop_at_the_end_token(smollm) -> None:
    eos, pad = smollm.eos_ids[0], smollm.tokenizer.pad_token_id
    words = smollm.tokenizer("hello world", add_special_tokens=False)["input_ids"]
    done = smollm._completion([*words, eos, pad, pad, pad], prompt_tokens=7, max_new=10)
    assert (done.text, done.prompt_tokens, done.completion_tokens, done.finish_reason) == ("hello world", 7, len(words) + 1, "stop")
    cut = smollm._completion(words, prompt_tokens=7, max_new=len(words))
    assert (cut.completion_tokens, cut.finish_reason) == (len(words), "length")


@pytest.mark.slow
def test_smollm_mixed_sampling_settings_and_length_limit(smollm) -> None:
    hi = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]
    outs = smollm.generate([
        ChatRequest(hi, max_new_tokens=6, temperature=0.0),
        ChatRequest([{"role": "user", "content": "Is Paris in France?"}], json_schema=schema_for(YesNo),
                    max_new_tokens=30, temperature=0.8),
        ChatRequest(hi, max_new_tokens=6, temperature=0.0),
    ])
    assert outs[0].finish_reason == "length" and outs[0].completion_tokens == 6
    assert outs[0].text == outs[2].text  # greedy is deterministic
    assert YesNo.model_validate_json(outs[1].text)
    assert outs[1].finish_reason == "stop"
