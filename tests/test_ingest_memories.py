"""The ingest pipeline: bad lines named before any write, teams in parallel on Ray, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from memgraft.collab.bank import MemoryBank, open_bank
from memgraft.collab.data.generator import generate
from memgraft.collab.ingest import StreamError, ingest_stream, ingest_team, read_stream
from memgraft.collab.maintain.policies import RulesPolicy
from memgraft.collab.maintain.updater import MemoEmbedder, Updater
from memgraft.config import HiCoMERSettings
from tests.conftest import REPO
from tests.collab_bank_helpers import bank_rows
from tests.doubles import HashEmbedder


def write_lines(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def g(team, gid, day, *texts):
    return {"team": team, "group_id": gid, "time": f"2025-01-{day:02d}T09:00:00",
            "memories": [{"memory_id": f"{gid}-m{i}", "type": "team" if i == 0 else "individual", "author": "a",
                          "content": t} for i, t in enumerate(texts)]}


# -- reading the stream --------------------------------------------------------------------------


def test_every_bad_line_is_named_with_file_and_line(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [
        g("a", "g1", 1, "The meeting is at 9am."),
        '{"team": "a", "group_id": ',  # cut
        "",  # blank lines are allowed
        {"team": "a", "group_id": "g2", "time": "2025-01-02", "memories": [{"memory_id": "x", "type": "boss",
                                                                            "author": "a", "content": "c"}]},
        g("a", "g1", 3, "again g1"),
        g("a", "g4", 4, "reuses a memory id") | {"memories": [{"memory_id": "g1-m0", "type": "team", "author": "a",
                                                                 "content": "c"}]},
    ])
    with pytest.raises(StreamError) as err:
        read_stream(path)
    errors = err.value.errors
    assert [e.split(": ", 1)[0] for e in errors] == [f"{path}:2", f"{path}:4", f"{path}:5", f"{path}:6"]
    assert "not JSON" in errors[0] and "memories.0.type" in errors[1] and "repeats line 1" in errors[2]
    assert "memory 'g1-m0' repeats line 1" in errors[3] and "nothing was written" in str(err.value)


def test_each_teams_groups_come_in_time_order(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [g("b", "b2", 2, "x"), g("a", "a1", 1, "y"), g("b", "b1", 1, "z")])
    stream = read_stream(path)
    assert {t: [x.group_id for x in gs] for t, gs in stream.teams.items()} == {"b": ["b1", "b2"], "a": ["a1"]}
    assert stream.n_groups == 3


# -- the per-team loop, without Ray ----------------------------------------------------------------


class FailsOn(RulesPolicy):
    """The rules policy, failing when a given group's memories come up (a crash in the middle of a team)."""

    def __init__(self, group_prefix: str):
        super().__init__()
        self.group_prefix = group_prefix

    def judge(self, targets):
        if any(t.against and t.against[0].group_id.startswith(self.group_prefix) for t in targets):
            raise RuntimeError(f"boom at {self.group_prefix}")
        return super().judge(targets)


def bank_state(path) -> tuple[list, list]:
    """Everything the updater decides, in a comparable form (no wall-clock columns, no vectors)."""
    con = sqlite3.connect(path)
    try:
        memories = con.execute("SELECT team, memory_id, group_id, original, maintained, relation, action, valid, "
                               "maintained_at FROM memories ORDER BY team, memory_id").fetchall()
        decisions = con.execute("SELECT decision_id, team, memory_id, group_id, decided_at, level, relation, action, "
                                "before, after, valid_before, valid_after, decided_by FROM decisions "
                                "ORDER BY team, decided_at, decision_id").fetchall()
    finally:
        con.close()
    return memories, decisions


def test_a_failing_group_stops_its_team_and_a_rerun_resumes_there(tmp_path):
    data = generate(seed=2, teams=2, groups=6)
    stream = read_stream(data.write(tmp_path / "ds")["stream"])
    team = sorted(stream.teams)[0]
    settings = HiCoMERSettings()

    clean = MemoryBank(tmp_path / "clean.sqlite", MemoEmbedder(HashEmbedder()))
    ingest_stream(Updater(clean, RulesPolicy(), settings), stream)
    clean.close()

    bank = MemoryBank(tmp_path / "bank.sqlite", MemoEmbedder(HashEmbedder()))
    failing = stream.teams[team][3].group_id
    stats = ingest_team(Updater(bank, FailsOn(failing), settings), stream.teams[team])
    assert stats.applied == 3 and stats.failed_group == failing and "boom" in stats.error
    assert not bank.is_applied(team, failing) and bank.memory(team, f"{failing}-m01") is None
    again = ingest_stream(Updater(bank, RulesPolicy(), settings), stream)
    assert [(s.applied, s.skipped, s.error) for s in again] == [(3, 3, None), (6, 0, None)]
    bank.close()
    assert bank_state(tmp_path / "bank.sqlite") == bank_state(tmp_path / "clean.sqlite")


# -- the pipeline on Ray -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    data = generate(seed=3, teams=4, groups=8)
    return data, data.write(tmp_path_factory.mktemp("ingest-ds"))


@pytest.fixture(scope="module")
def clean_bank(ray_local, settings, dataset, tmp_path_factory):
    """The stream ingested by the pipeline in one clean run, rules policy, 2 workers: (path, summary, settings).

    In fp32, here and in the killed runs: a resumed run embeds only the groups left, in other batches, and a
    bf16 vector depends on the batch its text is padded in; the resume is what is tested here, not bf16's
    rounding."""
    from pipelines.ingest_memories import run_ingest

    s = settings.model_copy(deep=True)
    s.hicomer.updater_policy = "rules"
    s.models.embedder_dtype = "float32"
    path = tmp_path_factory.mktemp("clean") / "bank.sqlite"
    return path, run_ingest(s, str(dataset[1]["stream"]), str(path), workers=2), s


def test_a_teams_texts_are_embedded_ahead_in_one_call_and_the_bank_is_the_same(tmp_path, monkeypatch):
    data = generate(seed=3, teams=1, groups=8)
    stream = read_stream(data.write(tmp_path / "ds")["stream"])
    (team, groups), = stream.teams.items()
    texts = list(dict.fromkeys(m.content for g in groups for m in g.memories))
    settings = HiCoMERSettings()

    inner = HashEmbedder()
    bank = MemoryBank(tmp_path / "ahead.sqlite", MemoEmbedder(inner))
    stats = ingest_team(Updater(bank, RulesPolicy(), settings), groups)
    bank.close()
    assert stats.applied == len(groups) and inner.calls[0] == texts  # every memory text, before any group
    assert not any(t in texts for call in inner.calls[1:] for t in call)  # none of them embedded again

    per_group = MemoryBank(tmp_path / "per_group.sqlite", MemoEmbedder(HashEmbedder()))
    monkeypatch.setattr("memgraft.collab.ingest.prefetch_vectors", lambda *a: 0)
    ingest_team(Updater(per_group, RulesPolicy(), settings), groups)
    per_group.close()
    assert bank_state(tmp_path / "ahead.sqlite") == bank_state(tmp_path / "per_group.sqlite")


def test_workers_embed_in_the_auto_choice_cached_for_this_cpu(tmp_path, monkeypatch):
    from memgraft.config import Settings
    from memgraft.models import dtype
    from pipelines.ingest_memories import embedder_dtype_here

    def no_probe(*a, **k):
        raise AssertionError("probed")

    monkeypatch.setattr(dtype, "probe_sentence_transformer", no_probe)
    s = Settings()
    s.models.cache_dir = str(tmp_path)
    assert embedder_dtype_here("float32", s) == "float32"  # explicit: never probed, nothing cached
    assert not (tmp_path / dtype.CACHE_FILE).exists()
    # A choice cached for this model and CPU is what the workers load with "auto".
    key = dtype.choice_key(s.models.embedder)
    (tmp_path / dtype.CACHE_FILE).write_text(json.dumps({key: {
        "dtype": "bfloat16", "unit": "texts/s", "trials": [
            {"dtype": "float32", "rate": 1.0, "accurate": True}, {"dtype": "bfloat16", "rate": 2.0, "accurate": True}]}}))
    assert embedder_dtype_here("auto", s) == "bfloat16"


def test_bad_line_refused_before_anything_is_written(settings, tmp_path):
    from pipelines.ingest_memories import run_ingest

    path = write_lines(tmp_path / "s.jsonl", [g("a", "g1", 1, "fine"), "{oops"])
    with pytest.raises(StreamError, match=r"s\.jsonl:2: not JSON"):
        run_ingest(settings, str(path), str(tmp_path / "bank.sqlite"))
    assert not (tmp_path / "bank.sqlite").exists()


@pytest.mark.parametrize("url", ["postgresql+psycopg://memgraft:pw@host/db", "mysql://host/db"])
def test_a_wrong_bank_scheme_is_refused_before_ray_starts(settings, tmp_path, url, monkeypatch):
    from memgraft.collab.bank import BankError
    from pipelines import ingest_memories

    def no_ray(*_a, **_k):  # pragma: no cover - the failure this test is about
        raise AssertionError("Ray was started for a bank location that cannot be opened")

    monkeypatch.setattr(ingest_memories, "init_ray", no_ray)
    path = write_lines(tmp_path / "s.jsonl", [g("a", "g1", 1, "fine")])
    with pytest.raises(BankError, match="neither a path .* postgresql:// URL") as caught:
        ingest_memories.run_ingest(settings, str(path), url)
    assert "pw" not in str(caught.value) and ("SQLAlchemy" in str(caught.value)) == url.startswith("postgresql+")


def test_the_summary_and_messages_never_show_the_password():
    from memgraft.collab.bank.backend import hide_password

    assert hide_password("postgresql://memgraft:s3cr%40t@db:5432/bank?sslmode=require") == \
        "postgresql://memgraft:***@db:5432/bank?sslmode=require"
    assert hide_password("postgresql://u@h/db?password=s3cret&sslmode=require") == \
        "postgresql://u@h/db?password=***&sslmode=require"


@pytest.mark.slow
def test_pipeline_ingests_teams_in_parallel(clean_bank, dataset):
    from pipelines.ingest_memories import run_ingest

    path, summary, s = clean_bank
    data = dataset[0]
    assert summary["workers"] == 2 and summary["teams"] == 4 and summary["failed_teams"] == 0
    assert summary["applied"] == summary["groups"] == 32 and summary["skipped"] == 0
    memories, decisions = bank_state(path)
    assert len(memories) == len(data.memories) and len(decisions) == summary["decisions"]
    assert sum(d[7] == "revise" for d in decisions) == summary["revisions"] > 0
    gold = {m["memory_id"]: m for m in data.memories}
    agree = sum(bool(m[7]) == (gold[m[1]]["outdated_at"] is None) for m in memories) / len(memories)
    assert agree >= 0.95, agree

    again = run_ingest(s, str(dataset[1]["stream"]), str(path), workers=2)
    assert again["applied"] == 0 and again["skipped"] == 32 and again["decisions"] == 0
    assert bank_state(path) == (memories, decisions)


RUNNER = """
import json, sys, time
sys.path.insert(0, {repo!r})
import ray
from memgraft.collab.maintain.policies import RulesPolicy
from memgraft.config import load_settings
from pipelines.ingest_memories import run_ingest

class SlowRules(RulesPolicy):
    def judge(self, targets):
        time.sleep({delay})
        return super().judge(targets)

def slow_rules(settings, embedder):
    return SlowRules(embedder=embedder)

ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
s = load_settings("local", ["hicomer.updater_policy=rules", "models.embedder_dtype=float32"])  # as clean_bank
summary = run_ingest(s, sys.argv[1], sys.argv[2], workers={workers}, policy_factory=slow_rules)
print(json.dumps({{k: v for k, v in summary.items() if k != "team_stats"}}))
"""


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL a process and everything under it at once (Ray's workers are not in its process group)."""
    import psutil

    try:
        tree = [psutil.Process(proc.pid)]
        tree += tree[0].children(recursive=True)
    except psutil.NoSuchProcess:  # it ended by itself (``poll`` reaped it): the caller's assertion says why
        tree = []
    for p in tree:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(tree, timeout=30)
    proc.wait()


def applied_groups(path) -> int:
    if not os.path.exists(path):
        return 0
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM groups").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def kill_mid_run(tmp_path, stream: str, location: str, workers: int, applied) -> int:
    """Run the slow pipeline into ``location`` in its own process and SIGKILL it whole (the driver, its Ray and
    the workers, mid-group: as if the machine died) once ``applied(location)`` counts 6 groups; the count after."""
    slow = tmp_path / "slow.py"
    slow.write_text(RUNNER.format(repo=str(REPO), delay=0.4, workers=workers))
    proc = subprocess.Popen([sys.executable, str(slow), stream, location], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and applied(location) < 6 and proc.poll() is None:
        time.sleep(0.2)
    kill_tree(proc)
    done = applied(location)
    assert 6 <= done < 32, proc.stderr.read().decode()[-2000:]
    return done


@pytest.mark.slow
def test_killed_pipeline_resumes_without_duplicates(clean_bank, dataset, tmp_path):
    stream, bank = str(dataset[1]["stream"]), tmp_path / "bank.sqlite"
    done = kill_mid_run(tmp_path, stream, str(bank), 2, applied_groups)

    # a new driver on a new cluster (the test's own) resumes
    from pipelines.ingest_memories import run_ingest

    summary = run_ingest(clean_bank[2], stream, str(bank), workers=2)
    assert summary["skipped"] == done and summary["applied"] == 32 - summary["skipped"]
    assert summary["failed_teams"] == 0
    # no duplicates, no half groups: exactly the bank a clean run writes
    assert bank_state(bank) == bank_state(clean_bank[0])


# -- many writers on one PostgreSQL bank ------------------------------------------------------------


def applied_anywhere(location: str) -> int:
    """Groups committed in a bank at ``location`` (a PostgreSQL URL), through the bank's own reads."""
    with open_bank(location) as bank:
        return sum(bank.stats(t)["groups"] for t in bank.teams())


@pytest.mark.slow
def test_killed_pipeline_with_four_workers_on_postgres_resumes_to_the_clean_bank(clean_bank, dataset, tmp_path,
                                                                                  pg_url):
    """``ingest_memories.py --workers 4`` on one PostgreSQL bank, killed whole (driver, Ray, workers) mid-run;
    a new run resumes, and the bank equals the clean SQLite run's, decision for decision."""
    stream, url = str(dataset[1]["stream"]), pg_url()
    done = kill_mid_run(tmp_path, stream, url, 4, applied_anywhere)

    from pipelines.ingest_memories import run_ingest

    summary = run_ingest(clean_bank[2], stream, url, workers=4)
    assert summary["skipped"] == done and summary["applied"] == 32 - done and summary["failed_teams"] == 0
    assert bank_rows(url) == bank_rows(clean_bank[0])


WRITER = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from memgraft.collab.bank import open_bank
from memgraft.collab.bank import pg_apply
from memgraft.collab.ingest import ingest_team, read_stream
from memgraft.collab.maintain.policies import RulesPolicy
from memgraft.collab.maintain.updater import MemoEmbedder, Updater
from memgraft.config import HiCoMERSettings
from tests.doubles import HashEmbedder

stream, url, team, stall_at, marker = sys.argv[1:]
apply = pg_apply.apply_group

def stalling_apply(db, args, refusals):  # this group's rows are written, not committed: the kill lands here
    if refusals.group.group_id != stall_at:
        return apply(db, args, refusals)
    with db._shared.pool.connection() as conn:
        conn.execute("BEGIN")
        conn.execute(pg_apply.CALL, args)
        Path(marker).write_text(stall_at)
        time.sleep(60)

pg_apply.apply_group = stalling_apply
bank = open_bank(url, MemoEmbedder(HashEmbedder()))
stats = ingest_team(Updater(bank, RulesPolicy(), HiCoMERSettings()), read_stream(stream).teams[team])
sys.exit(1 if stats.error else 0)
"""


def test_four_writers_on_one_postgres_bank_and_one_killed_mid_group(tmp_path, pg_url):
    """Four processes write their teams to one PostgreSQL bank at once; one is SIGKILLed inside a group's
    transaction (rows written, not committed). A rerun resumes it, and the bank equals a clean run's."""
    data = generate(seed=3, teams=4, groups=8)
    path = str(data.write(tmp_path / "ds")["stream"])
    stream = read_stream(path)
    teams = sorted(stream.teams)
    clean = pg_url()
    with open_bank(clean, MemoEmbedder(HashEmbedder())) as bank:
        ingest_stream(Updater(bank, RulesPolicy(), HiCoMERSettings()), stream)

    url, script = pg_url(), tmp_path / "writer.py"
    script.write_text(WRITER.format(repo=str(REPO)))
    victim, stall = teams[0], stream.teams[teams[0]][3].group_id
    marker = tmp_path / "stalled"
    procs = [subprocess.Popen([sys.executable, str(script), path, url, t,
                               stall if t == victim else "-", str(marker)], cwd=REPO, stderr=subprocess.PIPE)
             for t in teams]
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline and procs[0].poll() is None:
        time.sleep(0.05)
    assert marker.exists(), procs[0].stderr.read().decode()[-2000:]
    procs[0].send_signal(signal.SIGKILL)  # inside the transaction of its 4th group
    assert [p.wait(timeout=60) for p in procs] == [-signal.SIGKILL, 0, 0, 0], [
        p.stderr.read().decode()[-1000:] for p in procs[1:]]

    with open_bank(url) as bank:  # the killed group left nothing: its team holds its first 3 groups only
        assert bank.stats(victim)["groups"] == 3 and not bank.is_applied(victim, stall)
        assert {m.group_id for m in bank.memories(victim)} == {g.group_id for g in stream.teams[victim][:3]}
    with open_bank(url, MemoEmbedder(HashEmbedder())) as bank:  # a new worker resumes
        again = ingest_stream(Updater(bank, RulesPolicy(), HiCoMERSettings()), stream)
    assert [(s.applied, s.skipped, s.error) for s in again] == [(5, 3, None)] + [(0, 8, None)] * 3
    assert bank_rows(url) == bank_rows(clean)
