"""Build the Serve application: the model deployments, each scaled by its own settings, and the ingress.

``serving:app`` is built from the environment (``MEMGRAFT_PROFILE``,
``MEMGRAFT_SET``, ``MEMGRAFT_TOKENS``); ``serving:build_app`` takes the same as
arguments (``serve run serving:build_app profile=a100 set="serving.port=8080"``)
and, from Python, an ``llm_factory`` so tests can put a scripted LLM in the LLM
deployment. With ``models.llm_backend: vllm`` the LLM is vLLM through
``ray.serve.llm``; any other backend runs in the LLM deployment through
``memgraft.models.llm.factory.load_llm``.
"""

from __future__ import annotations

import os
from typing import Any

from ray.serve import Application

from serving.embedder import EmbedderDeployment
from serving.ingress import Ingress
from serving.llm import LLMDeployment, LLMFactory
from serving.reranker import RerankerDeployment
from serving.scorer import ScorerDeployment
from serving.settings import OVERRIDES_ENV, PROFILE_ENV, TOKENS_ENV, ServingSettings, load_profile, split_overrides


def settings_from(args: dict[str, Any] | None = None, environ: dict[str, str] | None = None):
    """Library and serving settings from builder arguments, falling back to the environment."""
    args, env = args or {}, os.environ if environ is None else environ
    profile = args.get("profile") or env.get(PROFILE_ENV) or "local"
    overrides = split_overrides(env.get(OVERRIDES_ENV)) + split_overrides(args.get("set"))
    return load_profile(profile, overrides, tokens_file=args.get("tokens") or env.get(TOKENS_ENV) or None)


def compose(settings, serving: ServingSettings, llm_factory: LLMFactory | None = None) -> Application:
    d = serving.deployments
    embedder = EmbedderDeployment.options(**d.embedder.ray_options()).bind(settings, serving.embed_batching)
    reranker = RerankerDeployment.options(**d.reranker.ray_options()).bind(settings, embedder, serving.call_timeout_s)
    scorer = None
    if serving.scorer_path:
        scorer = ScorerDeployment.options(**d.scorer.ray_options()).bind(serving.scorer_path, serving.score_batching)
    if settings.models.llm_backend == "vllm" and llm_factory is None:
        from serving.vllm import build_llm

        llm, kind = build_llm(settings, serving), "vllm"
    else:
        llm = LLMDeployment.options(**d.llm.ray_options()).bind(settings, serving.llm_batching, llm_factory)
        kind = "local"
    return Ingress.options(**d.ingress.ray_options()).bind(settings, serving, llm=llm, embedder=embedder,
                                                           reranker=reranker, scorer=scorer, llm_kind=kind)


def build_app(args: dict[str, Any] | None = None, *, llm_factory: LLMFactory | None = None) -> Application:
    """The application; ``args`` keys: ``profile``, ``set`` ("a.b=1;c.d=2"), ``tokens`` (a tokens file)."""
    settings, serving = settings_from(args)
    return compose(settings, serving, llm_factory)
