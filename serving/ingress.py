"""The FastAPI ingress deployment: the library over proxies to the model deployments.

The FastAPI app is built in the replica, after the constructor, by
``__serve_build_asgi_app__`` (Serve's late-bound ingress), so its state holds this
replica's service: an app passed to ``serve.ingress(app)`` would be a pickled copy.

On start it asks each model deployment for its name (and the embedder for its
dimension), so the proxies present the same identity as the models themselves:
banks and graphs check the embedder's name and dimension before they accept a
query vector.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ray import serve

from memgraft.config import Settings
from memgraft.models.threads import one_blas_thread
from serving.access import Access
from serving.api import Chat, create_api, serve_state
from serving.chat import complete_on
from serving.proxies import EmbedderProxy, LLMProxy, PairEncoderProxy, RerankerProxy, ScorerProxy
from serving.service import Models, Service
from serving.settings import ServingSettings



@serve.deployment(name="ingress")
@serve.ingress()
class Ingress:
    async def __init__(self, settings: Settings, serving: ServingSettings, *, llm: Any, embedder: Any,
                       reranker: Any, scorer: Any = None, llm_kind: str = "local"):
        timeout = serving.call_timeout_s
        e, r = await embedder.info.remote(), await reranker.info.remote()
        if llm_kind == "vllm":  # ray.serve.llm's LLMServer: imported only on this path (it needs vLLM)
            from serving.vllm import ServeLLMProxy, forward_chat

            llm_proxy: Any = ServeLLMProxy(llm, settings, timeout)
            self._chat: Chat | None = lambda body: forward_chat(llm, body.model_dump(exclude_none=True))
        else:
            info = await llm.info.remote()
            llm_proxy = LLMProxy(llm, info["name"], timeout, info.get("context_tokens"))
            self._chat = lambda body: complete_on(llm, info["name"], body, timeout)  # cancellable, unlike a thread
        scorer_proxy = None
        if scorer is not None:
            scorer_proxy = ScorerProxy(scorer, (await scorer.info.remote())["dim"], serving.scorer_path or "", timeout)
        models = Models(llm=llm_proxy, embedder=EmbedderProxy(embedder, e["name"], e["dim"], timeout),
                        reranker=RerankerProxy(reranker, r["name"], r["is_cross_encoder"], timeout),
                        scorer=scorer_proxy, scorer_source=serving.scorer_path,
                        pair_encoder=PairEncoderProxy(embedder, timeout) if settings.hicomer.judge_encoder else None)
        self.service = Service(settings, serving, models)
        self._access = Access(serving.tokens_file)

    def __serve_build_asgi_app__(self):
        # Called on the replica's event loop, the one that serves requests: its default
        # executor is where the routes' asyncio.to_thread calls run.
        threads = self.service.serving.ingress_threads
        one_blas_thread()  # the ingress ranks teams with numpy beside the model replicas on the same cores
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(threads, thread_name_prefix="memgraft"))
        return serve_state(create_api(), self.service, self._access, self._chat)

    def __del__(self) -> None:
        service = getattr(self, "service", None)
        if service is not None:
            service.close()
