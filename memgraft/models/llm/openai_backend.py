"""Any OpenAI-compatible ``/v1/chat/completions`` server (vLLM, Ray Serve LLM) over HTTP.

Requests of a batch go out concurrently, so the server's own batching sees
them together. Schemas travel as ``response_format`` ``json_schema`` (strict),
which vLLM turns into constrained decoding. Connection failures, 429 and 5xx
answers are retried with exponential backoff; anything else fails at once with
an error naming the URL.

The client is urllib3's pool rather than httpx: a driver worker runs dozens of
questions in threads through one client, and under that load httpx spent about
twice the CPU per request (``bench/driver.py`` splits the worker's time).
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import urllib3

from memgraft.config import GenerationSettings, Settings
from memgraft.models.llm.base import ChatRequest, Completion
from memgraft.models.registry import display_name

RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class LLMServerError(RuntimeError):
    """The server could not be reached or refused a request."""


def chat_completions_url(base_url: str) -> str:
    """Accept ``http://host:8000``, ``…/v1`` or the full endpoint."""
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if not url.endswith("/v1"):
        url += "/v1"
    return url + "/chat/completions"


def _schema_name(schema: dict[str, Any]) -> str:
    # OpenAI restricts names to [a-zA-Z0-9_-]{1,64}.
    return re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "output"))[:64] or "output"


class OpenAICompatibleLLM:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        concurrency: int = 4,
        max_connections: int | None = None,
        temperature: float = 0.8,
        max_new_tokens: int = 2048,
        retries: int = 3,
        backoff_s: float = 0.5,
        sampling: dict[str, float] | None = None,
    ):
        self.url = chat_completions_url(base_url)
        self.name = model
        self.default_temperature = temperature
        self.default_max_new_tokens = max_new_tokens
        self.sampling = sampling or {}
        self.retries = retries
        self.backoff_s = backoff_s
        self.concurrency = max(1, concurrency)
        self._headers = {"Content-Type": "application/json",
                         **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
        # The pool is shared by every thread of a process (a driver worker runs many
        # questions at once), so it may be wider than one batch's fan-out.
        self._pool = urllib3.PoolManager(
            maxsize=max(self.concurrency, max_connections or 0), block=False,
            timeout=urllib3.Timeout(connect=min(timeout_s, 30.0), read=timeout_s),
            retries=False,  # retries are ours: with backoff, and only for the statuses above
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> "OpenAICompatibleLLM":
        m, g = settings.models, settings.generation
        if not m.llm_base_url:
            raise ValueError("models.llm_backend=openai needs models.llm_base_url (e.g. http://host:8000/v1)")
        return cls(
            m.llm_base_url, display_name(m.llm),
            api_key=os.environ.get(m.llm_api_key_env) if m.llm_api_key_env else None,
            timeout_s=m.llm_timeout_s, concurrency=m.llm_batch_size,
            max_connections=max(m.llm_batch_size, settings.hgmem.max_in_flight),
            temperature=g.temperature, max_new_tokens=g.max_new_tokens,
            sampling=sampling_of(g),
        )

    def close(self) -> None:
        self._pool.clear()

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for one request (public so callers and tests can see what is sent)."""
        return chat_body(request, self.name, temperature=self.default_temperature,
                         max_tokens=self.default_max_new_tokens, sampling=self.sampling)

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if len(requests) <= 1:
            return [self._post(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._post, requests))

    def _post(self, request: ChatRequest) -> Completion:
        payload = json.dumps(self.body(request), ensure_ascii=False).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self._pool.request("POST", self.url, body=payload, headers=self._headers)
            except urllib3.exceptions.HTTPError as err:  # refused, reset, timed out
                last = f"{type(err).__name__}: {err}"
                continue
            if resp.status in RETRY_STATUS:
                last = f"HTTP {resp.status}: {_text(resp)[:300]}"
                continue
            if resp.status >= 400:
                raise LLMServerError(f"LLM server {self.url} rejected the request: HTTP {resp.status}: {_text(resp)[:500]}")
            return self._completion(resp)
        raise LLMServerError(f"LLM server {self.url} failed after {self.retries + 1} attempts: {last}")

    def _completion(self, resp: urllib3.BaseHTTPResponse) -> Completion:
        try:
            data = json.loads(resp.data)
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return Completion(
                text=choice["message"].get("content") or "",
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                finish_reason=choice.get("finish_reason") or "stop",
            )
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise LLMServerError(f"LLM server {self.url} sent an unreadable answer ({err}): {_text(resp)[:300]}") from err


def _text(resp: urllib3.BaseHTTPResponse) -> str:
    return resp.data.decode("utf-8", errors="replace")


def sampling_of(g: GenerationSettings) -> dict[str, float]:
    """The profile's sampling knobs as OpenAI body fields (top_k and repetition_penalty are vLLM's extensions)."""
    return {"top_p": g.top_p, **({"top_k": g.top_k} if g.top_k else {}),
            **({"repetition_penalty": g.repetition_penalty} if g.repetition_penalty != 1.0 else {})}


def chat_body(request: ChatRequest, model: str, *, temperature: float, max_tokens: int,
              sampling: dict[str, float], seed: int | None = None) -> dict[str, Any]:
    """The OpenAI chat-completions body for one library request; its schema, if any, as ``response_format``."""
    body: dict[str, Any] = {
        "model": model,
        "messages": request.messages,
        "temperature": temperature if request.temperature is None else request.temperature,
        "max_tokens": max_tokens if request.max_new_tokens is None else request.max_new_tokens,
        **sampling,
    }
    seed = request.seed if request.seed is not None else seed
    if seed is not None:
        body["seed"] = seed
    if request.json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(request.json_schema), "schema": request.json_schema, "strict": True},
        }
    return body
