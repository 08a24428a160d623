"""A stand-in OpenAI-compatible LLM server for benchmarks: schema-valid JSON after a fixed delay.

A benchmark double (it lives in ``bench/``, not in the library). ``POST
/v1/chat/completions`` reads ``response_format.json_schema.schema``, waits
``delay_s`` with ``asyncio.sleep`` (so thousands of requests can wait at once at
no cost), and answers one JSON object valid for that schema. HGMem's five
output models are recognised by their properties and answered so that the
reasoning loop does real work, deterministically from the prompt alone:

- ``Evolution`` / ``InsertOnly``: insert one point joining the first two entity
  names listed under ``Entities:`` in the prompt (not already in memory), and
  (``Evolution``) update the first memory point shown, if any;
- ``Merging``: merge the first two active memory points into one whose
  description starts with ``merged:``;
- ``SufficiencyJudgement``: sufficient once memory shows a ``merged:`` point,
  otherwise not, with one global concern;
- ``Answer``: the first entity named in memory (else ``unknown``).

So an ``hgmem`` question runs: evolve (step 0), judge, evolve, merge (step 1),
judge (sufficient), answer: 6 calls; ``naive`` and ``graph`` make 1. Any other
schema gets a minimal instance built from the schema itself.

``usage`` counts **whitespace-separated words**, not model tokens: prompt =
words of every message's content, completion = words of the JSON answer.
With ``tokenizer=`` (a Hugging Face tokenizer folder) it counts that model's
tokens instead, the way the transformers backend does (the chat template with
the generation prompt, then the answer's tokens).

``GET /stats`` reports requests served, the peak number waiting at once and
counts per schema. With ``hold=N`` a request waits until N wait at once (or ``delay_s``
passes) rather than for ``delay_s``: a test of concurrency then counts, never times. Use it as a context manager; it runs in a background thread
(``Standin(process=False)``) or a subprocess (``process=True``, so its CPU work
takes no GIL from the caller), stops on exit, and stops by itself after
``max_seconds`` (a bound, in case the caller forgets). As a script:

    python bench/standin_server.py --delay 0.5 [--port 0] [--max-seconds 3600] [--tokenizer DIR]

prints ``PORT <n>`` once listening, and exits when stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.standin_answers import answer_for, words  # noqa: E402


# -- the server -----------------------------------------------------------------------------------


class _Counter:
    """Token counts for ``usage``: whitespace words, or a real tokenizer's tokens."""

    def __init__(self, tokenizer: str | None = None):
        self.kind = "whitespace words"
        self._tok = None
        if tokenizer:
            from transformers import AutoTokenizer

            self._tok = AutoTokenizer.from_pretrained(tokenizer)
            self.kind = f"tokens of {Path(tokenizer).name}"

    def prompt(self, messages: list[dict[str, Any]]) -> int:
        if self._tok is None:
            return sum(words(str(m.get("content", ""))) for m in messages)
        text = self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return len(self._tok(text, add_special_tokens=False)["input_ids"])

    def completion(self, text: str) -> int:
        if self._tok is None:
            return words(text)
        return len(self._tok(text, add_special_tokens=False)["input_ids"]) + 1  # + the end-of-turn token


class _State:
    def __init__(self, delay_s: float, tokenizer: str | None = None, hold: int = 0):
        self.delay_s, self.hold, self.held = delay_s, hold, asyncio.Event()
        self.count = _Counter(tokenizer)
        self.requests = 0
        self.waiting = 0
        self.peak_waiting = 0
        self.by_schema: Counter[str] = Counter()
        self.first_at: float | None = None
        self.last_at: float | None = None


def make_app(delay_s: float, tokenizer: str | None = None, hold: int = 0) -> web.Application:
    state = _State(delay_s, tokenizer, hold)

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        messages = body.get("messages") or []
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
        state.requests += 1
        state.first_at = state.first_at or time.time()
        state.waiting += 1
        state.peak_waiting = max(state.peak_waiting, state.waiting)
        if state.hold and state.waiting >= state.hold:
            state.held.set()
        try:
            if state.hold:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(state.held.wait(), state.delay_s)
            else:
                await asyncio.sleep(state.delay_s)
        finally:
            state.waiting -= 1
        kind, value = answer_for(schema, messages)
        state.by_schema[kind] += 1
        state.last_at = time.time()
        text = value if isinstance(value, str) else json.dumps(value)
        prompt_tokens, completion_tokens = state.count.prompt(messages), state.count.completion(text)
        return web.json_response({
            "id": f"standin-{state.requests}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "standin"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    async def stats(_: web.Request) -> web.Response:
        return web.json_response({"delay_s": state.delay_s, "counts": state.count.kind, "requests": state.requests, "waiting": state.waiting,
                                  "peak_waiting": state.peak_waiting, "by_schema": dict(state.by_schema),
                                  "first_at": state.first_at, "last_at": state.last_at})

    async def reset(_: web.Request) -> web.Response:
        state.requests = state.peak_waiting = 0
        state.by_schema.clear()
        state.first_at = state.last_at = None
        return web.json_response({"ok": True})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/chat/completions", chat)
    app.router.add_get("/stats", stats)
    app.router.add_post("/stats/reset", reset)
    return app


async def _serve(delay_s: float, port: int, ready: Any, stop: asyncio.Event, max_seconds: float,
                 tokenizer: str | None = None, hold: int = 0) -> None:
    runner = web.AppRunner(make_app(delay_s, tokenizer, hold), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096)
    await site.start()
    ready(site._server.sockets[0].getsockname()[1])  # the port actually bound (port 0: a free one)
    try:
        await asyncio.wait_for(stop.wait(), timeout=max_seconds)
    except asyncio.TimeoutError:
        pass
    finally:
        await runner.cleanup()


class Standin:
    """``with Standin(delay_s=0.5) as s: s.base_url`` -> ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, delay_s: float = 0.5, *, process: bool = False, max_seconds: float = 3600.0,
                 start_timeout_s: float = 60.0, tokenizer: str | None = None, hold: int = 0):
        self.delay_s, self.hold = delay_s, hold
        self.tokenizer = tokenizer
        self.process = process
        self.max_seconds = max_seconds
        self.start_timeout_s = start_timeout_s
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        import httpx

        return httpx.get(f"http://127.0.0.1:{self.port}/stats", timeout=10).json()

    def reset_stats(self) -> None:
        import httpx

        httpx.post(f"http://127.0.0.1:{self.port}/stats/reset", timeout=10)

    def __enter__(self) -> "Standin":
        if self.process:
            self._proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--delay", str(self.delay_s), "--hold", str(self.hold),
                 "--max-seconds", str(self.max_seconds), *(["--tokenizer", self.tokenizer] if self.tokenizer else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            line = self._proc.stdout.readline()  # type: ignore[union-attr]
            if not line.startswith("PORT "):
                self._proc.kill()
                raise RuntimeError(f"stand-in server did not start (said {line!r})")
            self.port = int(line.split()[1])
            return self
        got = threading.Event()

        def ready(port: int) -> None:
            self.port = port
            got.set()

        failed: list[BaseException] = []

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._stop = asyncio.Event()
            try:
                self._loop.run_until_complete(
                    _serve(self.delay_s, 0, ready, self._stop, self.max_seconds, self.tokenizer, self.hold))
            except BaseException as err:  # noqa: BLE001 - handed to the caller below
                failed.append(err)
                got.set()
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="standin-server", daemon=True)
        self._thread.start()
        if not got.wait(self.start_timeout_s) or failed:
            raise RuntimeError(f"stand-in server did not start: {failed[0] if failed else 'timed out'}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            try:
                self._proc.stdin.close()  # type: ignore[union-attr]
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._thread is not None and self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)
            self._thread = None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds every answer waits")
    parser.add_argument("--hold", type=int, default=0, help="answer once this many wait at once (--delay: at most)")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="stop by itself after this long")
    parser.add_argument("--tokenizer", default=None, help="count usage in this tokenizer's tokens (a folder)")
    args = parser.parse_args(argv)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        def ready(port: int) -> None:
            print(f"PORT {port}", flush=True)

        def watch_stdin() -> None:  # the parent closed stdin (or died): stop
            sys.stdin.read()
            loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=watch_stdin, daemon=True).start()
        await _serve(args.delay, args.port, ready, stop, args.max_seconds, args.tokenizer, args.hold)

    asyncio.run(run())


if __name__ == "__main__":
    main()
