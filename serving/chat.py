"""``POST /v1/chat/completions`` on the in-process LLM: the OpenAI body as a library ``ChatRequest``.

The cluster path forwards the body to vLLM (:func:`serving.vllm.forward_chat`);
locally the same endpoint answers from the LLM deployment, non-streaming, with a
``response_format`` ``json_schema`` decoded under constraint as any library call is.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from memgraft.models.llm.base import LLM, ChatRequest, Completion
from serving import schemas


class Unsupported(ValueError):
    """A chat option this LLM path does not serve (streaming locally): 422."""


VLLM_ONLY = ("top_p", "stop", "presence_penalty", "frequency_penalty")


def chat_request(body: schemas.ChatCompletionRequest) -> ChatRequest:
    if body.stream:
        raise Unsupported("streaming is served on the vLLM path only; send \"stream\": false")
    unserved = [f for f in VLLM_ONLY if getattr(body, f) is not None]
    if unserved:  # said, rather than silently ignored
        raise Unsupported(f"{', '.join(unserved)}: served on the vLLM path only")
    schema = None
    if body.response_format and body.response_format.get("type") == "json_schema":
        schema = (body.response_format.get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            raise Unsupported("response_format.json_schema.schema must be a JSON schema object")
    return ChatRequest([m.model_dump() for m in body.messages], json_schema=schema, max_new_tokens=body.max_tokens,
                       temperature=body.temperature, seed=body.seed)


def complete(llm: LLM, body: schemas.ChatCompletionRequest) -> schemas.ChatCompletionResponse:
    [out] = llm.generate([chat_request(body)])
    return response(llm.name, out)


async def complete_on(handle: Any, name: str, body: schemas.ChatCompletionRequest,
                      timeout_s: float | None) -> schemas.ChatCompletionResponse:
    """The same call awaited on the LLM deployment's handle from the event loop, not from a worker thread: when
    the client goes, Serve cancels this request, the cancel reaches the deployment, and it stops decoding."""
    request = chat_request(body)
    request.deadline = None if timeout_s is None else time.time() + timeout_s
    [out] = await asyncio.wait_for(handle.generate.remote([request]), timeout_s)
    return response(name, out)


def response(name: str, out: Completion) -> schemas.ChatCompletionResponse:
    return schemas.ChatCompletionResponse(
        id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=name,
        choices=[schemas.ChatChoice(index=0, message=schemas.ChatMessage(role="assistant", content=out.text),
                                    finish_reason=out.finish_reason)],
        usage=schemas.ChatUsage(prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                                total_tokens=out.prompt_tokens + out.completion_tokens))
