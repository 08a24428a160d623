"""One typed settings object for the whole system.

Every number the two papers fix is a named field here, so an ablation or a
cluster run changes a setting instead of code. Profiles live in
``configs/<name>.yaml``; command lines override single fields with dotted
``section.field=value`` pairs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO_ROOT / "configs"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ChunkingSettings(_Section):
    """HGMem's offline chunking: 200-token windows, 50 tokens shared."""

    size: int = Field(200, gt=0)
    overlap: int = Field(50, ge=0)


class ModelSettings(_Section):
    """Which backend serves each model role. ``bundled:`` names resolve offline."""

    embedder: str = "bundled:all-MiniLM-L6-v2"
    # "auto": whichever of bf16/fp32 measured faster for this model on this CPU, within an
    # accuracy bound, probed once per machine and cached (memgraft.models.dtype); a GPU keeps bf16.
    embedder_dtype: Literal["float32", "bfloat16", "auto"] = "float32"
    embed_batch_size: int = 32
    llm_backend: Literal["transformers", "openai", "vllm"] = "transformers"
    llm: str = "bundled:SmolLM2-135M-Instruct"
    llm_dtype: Literal["float32", "bfloat16", "auto"] = "bfloat16"
    llm_base_url: str | None = None
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_batch_size: int = 4
    llm_timeout_s: float = 600.0
    llm_tensor_parallel: int = 1
    reranker: str = "cosine"
    spacy_model: str = "bundled:en_core_web_sm"
    cache_dir: str = "~/.cache/memgraft"
    torch_threads: int = 0  # 0: one thread per CPU the process may use


class GenerationSettings(_Section):
    """Sampling for every LLM call (HGMem's paper: temperature 0.8, 2,048 new tokens)."""

    temperature: float = 0.8
    max_new_tokens: int = 2048
    json_retries: int = 2
    # a reply still cut at max_new_tokens after the retries keeps the items it closed, when they make a
    # valid answer (memgraft/models/llm/salvage.py); false: the call fails, as the papers' pipelines would
    salvage_cut_replies: bool = True
    seed: int | None = 0
    top_p: float = 1.0
    top_k: int = 0  # 0: no top-k cut
    repetition_penalty: float = 1.0


class ExtractionSettings(_Section):
    # spacy: entities linked by sharing a sentence; openie: by a verb (subject-predicate-object, from the
    # dependency parse; HGMem's Table 4 graph); llm: the schema-constrained LLM extractor
    method: Literal["spacy", "openie", "llm"] = "spacy"
    noun_chunks: bool = True
    # Which noun chunks become concepts: "none" keeps every one; "single_common" drops a chunk that is one
    # lower-case common noun ("behalf", "time", "upheaval"), keeping multi-word chunks, proper nouns and
    # named entities. The default by `make bench` on MuSiQue: graph recall@5 a tie (0.651 against 0.628 on
    # the first 1,000 passages, 0.607 against 0.613 on all), 95% fewer one-word concepts, a third fewer
    # relations (README, "Index documents").
    noun_chunk_filter: Literal["none", "single_common"] = "single_common"
    max_entities_per_sentence: int = 8
    max_description_parts: int = 5
    min_entity_chars: int = 2
    llm_max_new_tokens: int = 1024
    entity_types: list[str] = ["organization", "person", "geo", "event", "role", "concept"]


class IndexSettings(_Section):
    exact_max_vectors: int = 200_000
    kind_above_exact: Literal["hnsw", "ivf"] = "hnsw"
    hnsw_m: int = 32
    hnsw_ef_search: int = 128
    ivf_lists: int = 1024
    ivf_probe: int = 32


class PipelineSettings(_Section):
    """Ray Data sizing for ``build_graphs``."""

    max_document_mb: float = 20.0
    read_tasks: int = 0  # 0: one per input file, capped at the CPUs
    chunk_batch_size: int = 64
    extract_actors: int = 1
    extract_batch_size: int = 64
    embed_actors: int = 1
    embed_batch_size: int = 128
    # CPUs reserved per actor and per task. On a 2-core machine two 1-CPU actors
    # would leave nothing for the read/chunk tasks and the job would stall, so the
    # local profile reserves fractions; torch threads are set explicitly anyway.
    actor_cpus: float = 1.0
    task_cpus: float = 1.0
    # Entity and relation texts (the pass after the merge) up to this many are embedded in
    # the driver: a second actor pool's start-up and model load cost more than it saves on
    # small graphs. 0: always on the actor pool (a cluster, where the driver has no GPU).
    driver_embed_max_texts: int = 0
    # The driver embeds the chunks as they stream out of extraction, on the cores the extract actors leave,
    # with the model it keeps for the entity and relation texts (pipelines/driver_embed.py): one model load
    # per build, not one per actor and one in the driver. Off: an embedding actor pool (a cluster, a GPU).
    embed_chunks_in_driver: bool = False


class HGMemSettings(_Section):
    """HGMem's retrieval and reasoning numbers (paper defaults)."""

    top_entities: int = 20
    relations_per_entity: int = 5
    top_chunks: int = 10
    max_chunks_per_step: int = 50
    # The last step t, step 0 being the initial retrieval: the paper's best setting t = 3 runs four
    # rounds (0, 1, 2, 3) before the answer. 0: the initial retrieval only.
    max_step: int = Field(3, ge=0)
    local_hops: int = 2
    exclude_memory_entities: bool = True
    # Prompt budgets in the LLM's own tokens (memgraft.models.llm.tokens). evidence_tokens: a step's retrieved
    # entities, relations and chunks as the evolve prompt shows them (a quarter, a quarter, a half), shared
    # round-robin by the step's subqueries; answer_context_tokens: the answer's memory and chunks (half each).
    evidence_tokens: int = Field(6000, gt=0)
    answer_context_tokens: int = Field(6000, gt=0)
    max_in_flight: int = 16
    # Questions one worker actor runs at once, in threads. bench/driver.py at 256 in flight
    # on 2 cores: 0.78 efficiency in one worker, 0.84-0.85 in 2 or 4 (capped to the CPUs there are).
    questions_per_worker: int = 64

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "max_steps" in data:
            n = str(data["max_steps"])
            same = f"max_step={int(n) - 1}" if n.lstrip("-").isdigit() else "max_step = max_steps - 1"
            raise ValueError(f"hgmem.max_steps was renamed hgmem.max_step, the last step t (t = 0 is the initial "
                             f"retrieval); max_steps={n} counted the rounds: the same run is {same}")
        return data


class HiCoMERSettings(_Section):
    """HiCoMER's updater, retriever and resolver weights."""

    history_top_k: int = 10
    candidate_top_n: int = 30
    validity_lambda: float = 1.0
    priority_alpha: float = 1.0
    priority_beta: float = 0.5
    priority_gamma: float = 0.25
    reward_consistency: float = 1.0
    reward_revision: float = 0.5
    reward_format: float = 0.2
    # The default judge is a small trained pair classifier over the bank's embeddings (memgraft.collab.maintain.judge);
    # "rules" is the text-rule baseline, "llm" the paper's LLM updater (trained: updater_model; for clusters).
    updater_policy: Literal["judge", "rules", "llm"] = "judge"
    judge_model: str = "bundled"  # a file from `make train-updater`; "bundled": shipped for all-MiniLM-L6-v2
    judge_threshold: float = Field(0.5, gt=0.0, lt=1.0)  # P(contradiction) from which a pair contradicts
    # The judge's second opinion on pairs in doubt: a cross-encoder (memgraft.collab.maintain.pair_encoder) that reads
    # both texts together. "bundled": shipped for all-MiniLM-L6-v2; a file from `make train-updater`; "": none.
    judge_encoder: str = "bundled"
    judge_encoder_from: float = Field(0.05, ge=0.0, le=1.0)  # the judge's P(contradiction) from which it asks
    judge_encoder_weight: float = Field(0.5, ge=0.0, le=1.0)  # the encoder's share of the averaged probabilities
    # At most this many pairs of one judging call go to the encoder, the most doubtful first (0: every pair in
    # doubt). It costs ~0.1-0.3 s a pair on 2 cores: a group of 64 long notes had 128 pairs in doubt, 40 s of its
    # write; the rest keep the judge's own reading.
    judge_encoder_max_pairs: int = Field(0, ge=0)
    # The encoder's inference dtype: bfloat16 read 128 pairs of long notes 2x faster than float32 on a CPU with
    # avx512_bf16 (probabilities within 5e-3), and would be far slower on one without it. auto: the embedder's
    # measured choice for the encoder's base model on this CPU (memgraft.collab.maintain.pair_encoder.inference_dtype).
    judge_encoder_dtype: Literal["float32", "bfloat16", "auto"] = "float32"
    # H_t: besides the group query's top history_top_k, each new memory's own nearest valid memories.
    # A group of many subjects' records (real streams) has a mean vector near none of them.
    history_per_memory: int = Field(5, ge=0)
    # An earlier memory that states, word for word, the value of a note the group's team memory just overruled
    # is superseded by that team memory too (memgraft.collab.maintain.carry): the note links two wordings of one subject.
    carry_overruled: bool = True
    # A note that a team memory of its own group states again is not overruled by the group's other team
    # memories (one group's team memories hold together: the conflict read is with another subject).
    judge_coexisting: bool = True
    # A memory supersedes one subject's memories: of those it would revise, one the judge reads as about another
    # subject than the memory it contradicts most surely is judged again without it (memgraft.collab.maintain.judge).
    judge_one_subject: bool = True
    # subject first (memgraft.collab.maintain.subject): a memory naming another subject never supersedes, one stating the
    # same value agrees, and a decision that names the value it replaces ("instead of X") supersedes what states X
    judge_subject_first: bool = True
    # where neither memory names a subject, a pair each of whose texts has a word the other lacks, rarer in the team
    # than every word they share, is on two topics and never supersedes (memgraft.collab.maintain.topic); read from
    # this many team memories on; and at any size, two memories answering two lower-case questions (a "?" or a
    # quoted question; each has a word the other text lacks) never supersede each other (0: neither)
    judge_topic_from: int = Field(50, ge=0)
    # S_val at search: "state" (the maintained validity flag as ±validity_state_logit), "none" (S_final = S_sem:
    # HiCoMER without the validity score), or a scorer file from `make train-retriever`.
    validity_scorer: str = "state"
    # Who judges contradictions among an answer's evidence (the resolver): the same kinds as updater_policy.
    conflict_judge: Literal["judge", "rules", "llm"] = "judge"
    validity_state_logit: float = Field(12.0, gt=0.0)
    # A trained updater (an HF folder from training/updater_*.py); "" judges with models.llm.
    updater_model: str = ""
    # validity scorer (S_val): MLP width, team/individual embedding size, and its pairwise training
    validity_hidden: int = Field(128, gt=0)
    validity_type_dim: int = Field(8, gt=0)
    validity_dropout: float = Field(0.1, ge=0.0, lt=1.0)
    validity_lr: float = Field(1e-3, gt=0.0)
    validity_epochs: int = Field(30, gt=0)
    validity_batch_size: int = Field(64, gt=0)
    validity_negatives: int = Field(2, gt=0)  # negatives drawn per valid gold memory
    answer_evidence_tokens: int = Field(1200, gt=0)  # evidence budget of the answer prompt
    # The cosine fallback's S_sem spans ~0.5 where a cross-encoder's logits span ~10, so
    # λ·log σ(S_val) would swamp relevance: the fallback's cosine is multiplied by this.
    # 5 was chosen on generate(seed=0) and held on seed=1 (python -m memgraft.eval collab).
    cosine_semantic_scale: float = Field(5.0, gt=0.0)
    # Cosine fallback only: take S_sem from the dense search's stored vectors (same texts,
    # same encoder) instead of re-encoding the candidates, ~10x faster per search.
    semantic_from_dense: bool = False


class TrainingSettings(_Section):
    """Ray Train runs of ``training/``: sizing, data, and the updater's SFT/GRPO and the scorer's budgets.

    The defaults are the embedded profile's: SmolLM2-135M on a 2-core CPU, where one
    full-model SFT step on a ~450-token prompt costs seconds, so the budgets are small
    and only the top ``trainable_layers`` blocks learn. ``configs/a100.yaml`` sets the
    cluster's (GPU workers, all layers, bf16, DeepSpeed ZeRO-3).
    """

    # Ray Train: one TorchTrainer per run, checkpointed under storage_path/<run name>
    num_workers: int = Field(1, gt=0)
    use_gpu: bool = False
    cpus_per_worker: float = Field(2.0, gt=0)
    gpus_per_worker: float = Field(1.0, ge=0)
    storage_path: str = ""  # local dir or URI (s3://, gs://...); "" = <output>/ray
    checkpoints_to_keep: int = Field(2, gt=0)
    deepspeed: str = ""  # "", "zero2", "zero3" (training/ds_zero*.json) or a JSON file
    bf16: bool = False
    gradient_checkpointing: bool = False
    base_model: str = ""  # the updater to start from; "" = models.llm
    trainable_layers: int = Field(8, ge=0)  # top transformer blocks trained (0 = the whole model)
    # data: generated teams (and optional TimeQA pages), split by team so no source is in both halves
    seed: int = 0
    teams: int = Field(6, gt=0)
    groups: int = Field(10, gt=0)
    timeqa: str = ""  # a TimeQA JSON file; "" = generated data only
    timeqa_pages: int = Field(0, ge=0)
    heldout_fraction: float = Field(0.34, gt=0.0, lt=1.0)
    eval_instances: int = Field(24, gt=0)  # held-out decisions scored, balanced over relations
    eval_temperature: float = Field(0.0, ge=0.0)
    eval_max_new_tokens: int = Field(160, gt=0)
    eval_gpus: float = Field(0.0, ge=0)  # GPUs of the Ray task that scores a model
    # updater SFT (TRL SFTTrainer)
    sft_examples: int = Field(0, ge=0)  # training decisions offered (0 = all), balanced over relations
    sft_max_steps: int = Field(48, gt=0)
    sft_batch_size: int = Field(4, gt=0)
    sft_grad_accum: int = Field(1, gt=0)
    sft_lr: float = Field(3e-4, gt=0.0)
    sft_save_steps: int = Field(24, gt=0)
    sft_max_length: int = Field(1024, gt=0)
    # updater GRPO (TRL GRPOTrainer), R = λ1·R_cons + λ2·R_rev + λ3·R_fmt (hicomer.reward_*)
    grpo_max_steps: int = Field(6, gt=0)
    grpo_batch_size: int = Field(8, gt=0)  # completions per device per step (/ num_generations = prompts)
    grpo_num_generations: int = Field(4, ge=2)
    grpo_max_completion_length: int = Field(112, gt=0)
    grpo_temperature: float = Field(0.8, gt=0.0)
    grpo_lr: float = Field(5e-6, gt=0.0)
    grpo_beta: float = Field(0.0, ge=0.0)  # KL to the SFT model; 0 loads no reference model
    grpo_save_steps: int = Field(3, gt=0)
    # validity scorer (its MLP and loss settings are hicomer.validity_*)
    # The states the scorer learns from: the paper's order is the trained updater's maintained bank
    # ("judge": hicomer.judge_model, by default the one make train-updater ships); "gold" the dataset's
    # own decisions; "rules" the text-rule baseline's.
    validity_bank: Literal["judge", "gold", "rules"] = "judge"
    validity_teams: int = Field(6, gt=0)
    validity_groups: int = Field(12, gt=0)


class BankSettings(_Section):
    """A PostgreSQL bank's connections in one process (``memgraft.collab.bank.pool``): one pool per process and
    URL, shared by every team's bank, so 1,000 teams use ``pool_size`` connections, not 1,000. The timeouts
    turn a stalled writer or a gone server into a named error (the service: 503 with Retry-After), not a hang."""

    pool_size: int = Field(10, ge=1)  # connections at most, per process and bank URL
    pool_timeout_s: float = Field(3.0, gt=0)  # waiting for a connection (all busy, or the server unreachable)
    statement_timeout_s: float = Field(30.0, gt=0)  # one statement (an as-of search at 100k takes ~1 s)
    lock_timeout_s: float = Field(10.0, gt=0)  # waiting for a lock (the team's writer lock included)
    idle_in_transaction_s: float = Field(60.0, gt=0)  # a transaction left open by a stalled client
    reconnect_s: float = Field(2.0, gt=0)  # a lost connection is retried this long, then again on the next use
    # an ingest retries a group through a database outage (a restart) this long, backing off, then stops the team
    # with the error named (``memgraft.collab.bank.outage``); 0: stop at once
    outage_retry_s: float = Field(120.0, ge=0)
    # candidates a large team's HNSW scan keeps (pgvector's hnsw.ef_search, its default 40): recall against time.
    # On 47,453 real MiniLM sentences of ../shared/data (400 questions), recall@10 against exact search was 0.966
    # at 40, 0.989 at 100, 0.990 at 128, 0.995 at 200, 0.997 at 400 (1.7 ms at 128, 5.5 at 400); on 120,000
    # clustered vectors 1.000 from 100 (``bench/collab_scale.py --ef-sweep``); on random vectors, HNSW's worst
    # case and no bank's, 0.77 at 400 (25k)
    hnsw_ef_search: int = Field(128, ge=10, le=1000)


class Settings(_Section):
    profile: str = "local"
    chunking: ChunkingSettings = ChunkingSettings()
    models: ModelSettings = ModelSettings()
    generation: GenerationSettings = GenerationSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    index: IndexSettings = IndexSettings()
    pipeline: PipelineSettings = PipelineSettings()
    hgmem: HGMemSettings = HGMemSettings()
    hicomer: HiCoMERSettings = HiCoMERSettings()
    training: TrainingSettings = TrainingSettings()
    bank: BankSettings = BankSettings()

    @property
    def cache_path(self) -> Path:
        return Path(os.path.expanduser(self.models.cache_dir))


def _parse_value(raw: str) -> Any:
    """Read an override's value as YAML so ``3``, ``0.5``, ``true`` and ``[a, b]`` type themselves."""
    return yaml.safe_load(raw) if raw != "" else ""


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not of the form section.field=value")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {part!r} is not a section")
        node[parts[-1]] = _parse_value(raw)
    return data


def load_settings(profile: str | Path = "local", overrides: list[str] | None = None) -> Settings:
    """Load a profile (a name under ``configs/`` or a YAML path) and apply overrides."""
    path = Path(profile)
    if not path.suffix:
        path = CONFIG_DIR / f"{profile}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"settings profile {str(profile)!r} not found (looked for {path})")
    data = yaml.safe_load(path.read_text()) or {}
    data.setdefault("profile", path.stem)
    return Settings.model_validate(apply_overrides(data, overrides or []))
