"""Shared fixtures: offline models only, one local Ray for the whole session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
# Ray Train's controller polls its workers every 2 s by default; the suite's dozen short runs each wait
# out a few polls at start and end. Set before ray.init, so the cluster's processes inherit it.
os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.25")

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def settings():
    from memgraft.config import load_settings

    return load_settings("local")


@pytest.fixture(scope="session")
def embedder(settings):
    from memgraft.models.embedder import load_embedder

    return load_embedder(settings)


@pytest.fixture(scope="module")
def world(embedder):
    """HGMem's small graph in memory: two clusters of entities joined by one bridge, each fact its own chunk."""
    from tests.facts_world import fact_store

    return fact_store(embedder)


@pytest.fixture(scope="session")
def tokenizer(settings):
    from memgraft.models.embedder import load_tokenizer

    return load_tokenizer(settings.models.embedder)


@pytest.fixture(scope="session")
def ray_local():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def musique_slice(tmp_path_factory) -> Path:
    """The first 30 MuSiQue passages as a corpus file."""
    corpus = json.loads((DATA / "musique" / "musique_train_corpus.json").read_text())[:30]
    path = tmp_path_factory.mktemp("musique") / "corpus.json"
    path.write_text(json.dumps(corpus))
    return path


@pytest.fixture(scope="session")
def slice_graph(ray_local, settings, musique_slice, tmp_path_factory):
    """A graph of the MuSiQue slice, built once per session: (folder, BuildReport)."""
    from pipelines.build_graphs import run_build

    out = tmp_path_factory.mktemp("slice-graph")
    return out, run_build(settings, str(musique_slice), str(out))


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server with pgvector for the session, stopped and deleted after (see ``bank.scratch``)."""
    from memgraft.collab.bank.scratch import ScratchPostgres

    server = ScratchPostgres()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server):
    """A factory of fresh, empty bank databases on the session's server, as ``postgresql://`` URLs."""
    return pg_server.database


# -- the memory-bank tests' backends (test_collab_bank.py, test_collab_bank_asof.py) ------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh(request, tmp_path):
    """A factory of new, empty bank locations on the parametrized backend."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_url")
    made = iter(range(1 << 30))
    return lambda: str(tmp_path / f"bank{next(made)}.sqlite")


@pytest.fixture
def location(fresh):
    return fresh()


@pytest.fixture
def bank(location):
    from memgraft.collab.bank import MemoryBank
    from tests.doubles import HashEmbedder

    b = MemoryBank(location, HashEmbedder())
    yield b
    b.close()
