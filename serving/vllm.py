"""The cluster LLM (``models.llm_backend: vllm``): vLLM through ``ray.serve.llm``, inside the same application.

``build_llm_deployment(LLMConfig)`` gives an ``LLMServer`` deployment (vLLM with
continuous batching, tensor parallel over ``models.llm_tensor_parallel`` GPUs).
The ingress reaches it two ways:

- the library's calls go through :class:`ServeLLMProxy`, which turns each
  ``ChatRequest`` into an OpenAI chat request (a JSON schema becomes
  ``response_format: json_schema``, which vLLM decodes under constraint) and all
  requests of a batch are in flight together, so vLLM schedules them as one;
- ``POST /v1/chat/completions`` forwards the client's OpenAI body to
  ``LLMServer.chat``, streaming included.

``ray.serve.llm``'s request models import vLLM, so this module imports them only
when the cluster path runs: nothing here is imported on the local profile.
"""

from __future__ import annotations

from typing import Any, Sequence

from memgraft.config import Settings
from memgraft.models.llm.base import ChatRequest, Completion
from memgraft.models.llm.openai_backend import LLMServerError, sampling_of
from memgraft.models.llm.openai_backend import chat_body as openai_chat_body
from memgraft.models.registry import display_name
from serving.settings import ServingSettings


def model_id(settings: Settings) -> str:
    return display_name(settings.models.llm)


def llm_config(settings: Settings, serving: ServingSettings):
    """The ``LLMConfig`` for ``models.llm`` on vLLM, scaled by ``serving.deployments.llm``."""
    from ray.serve.llm import LLMConfig

    from memgraft.models.llm.vllm_backend import engine_dtype, engine_model_source

    opts = serving.deployments.llm
    engine = {"tensor_parallel_size": settings.models.llm_tensor_parallel, "dtype": engine_dtype(settings.models.llm_dtype),
              **serving.vllm_engine_kwargs}
    return LLMConfig(
        model_loading_config={"model_id": model_id(settings), "model_source": engine_model_source(settings)},
        deployment_config={"num_replicas": opts.replicas, "max_ongoing_requests": opts.max_ongoing_requests},
        engine_kwargs=engine,
        **({"accelerator_type": serving.vllm_accelerator_type} if serving.vllm_accelerator_type else {}),
        **({"placement_group_config": serving.vllm_placement_group} if serving.vllm_placement_group else {}),
    )


def build_llm(settings: Settings, serving: ServingSettings):
    """The vLLM deployment, bound (an Application to pass to the ingress as its LLM handle)."""
    from ray.serve.llm import build_llm_deployment

    return build_llm_deployment(llm_config(settings, serving), name_prefix="llm:")


def chat_body(request: ChatRequest, model: str, settings: Settings) -> dict[str, Any]:
    """The OpenAI chat body for one library request, with the profile's sampling defaults and seed."""
    g = settings.generation
    return openai_chat_body(request, model, temperature=g.temperature, max_tokens=g.max_new_tokens,
                            sampling=sampling_of(g), seed=g.seed)


def _first(item: Any) -> Any:
    return item[0] if isinstance(item, list) else item


class ServeLLMProxy:
    """``LLM`` over the ``LLMServer`` handle: a batch's requests go out together, then are collected."""

    def __init__(self, handle: Any, settings: Settings, timeout_s: float | None = None):
        self.handle, self.settings, self.timeout_s = handle.options(stream=True), settings, timeout_s
        self.name = model_id(settings)

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        from ray.serve.llm.openai_api_models import ChatCompletionRequest

        streams = [self.handle.chat.remote(ChatCompletionRequest.model_validate(chat_body(r, self.name, self.settings)))
                   for r in requests]
        return [self._completion(_first(next(iter(s)))) for s in streams]

    def _completion(self, response: Any) -> Completion:
        from ray.serve.llm.openai_api_models import ErrorResponse

        if isinstance(response, ErrorResponse):
            raise LLMServerError(f"vLLM rejected the request: {response.error.message}")
        choice, usage = response.choices[0], response.usage
        return Completion(text=choice.message.content or "", prompt_tokens=int(usage.prompt_tokens),
                          completion_tokens=int(usage.completion_tokens), finish_reason=choice.finish_reason or "stop")


async def forward_chat(handle: Any, body: dict[str, Any]) -> Any:
    """``POST /v1/chat/completions`` on the cluster path: the client's body, answered by ``LLMServer.chat``."""
    from fastapi import HTTPException
    from fastapi.responses import JSONResponse, StreamingResponse
    from ray.llm._internal.serve.core.ingress.utils import _openai_json_wrapper
    from ray.serve.llm.openai_api_models import ChatCompletionRequest, ErrorResponse

    request = ChatCompletionRequest.model_validate(body)
    stream = handle.options(stream=True).chat.remote(request)
    first = await stream.__anext__()
    if isinstance(_first(first), ErrorResponse):
        err = _first(first).error
        raise HTTPException(status_code=int(err.code), detail=err.message)
    if not request.stream:
        return JSONResponse(_first(first).model_dump())

    async def chunks():
        yield first
        async for more in stream:
            yield more

    return StreamingResponse(_openai_json_wrapper(chunks()), media_type="text/event-stream")
