"""An ingest through a database outage: a PostgreSQL restart mid-run is ridden out, nothing lost or applied twice;
a server that stays away stops the team with one line naming the bank."""

from __future__ import annotations

import threading
import time

import pytest

from memgraft.collab.bank import BankUnavailable, open_bank, pool
from memgraft.collab.bank.outage import ride_out
from memgraft.collab.bank.postgres import PostgresBackend
from memgraft.collab.data.generator import generate
from memgraft.collab.ingest import ingest_stream, ingest_team, read_stream
from memgraft.collab.maintain.policies import RulesPolicy
from memgraft.collab.maintain.updater import MemoEmbedder, Updater
from memgraft.config import BankSettings, HiCoMERSettings
from tests.collab_bank_helpers import bank_rows
from tests.doubles import HashEmbedder


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    data = generate(seed=5, teams=2, groups=12)
    return read_stream(data.write(tmp_path_factory.mktemp("outage"))["stream"])


@pytest.fixture(scope="module")
def clean(stream, pg_server):
    """The uninterrupted run's bank."""
    url = pg_server.database()
    with open_bank(url, MemoEmbedder(HashEmbedder())) as bank:
        stats = ingest_stream(Updater(bank, RulesPolicy(), HiCoMERSettings()), stream)
    assert all(s.error is None and s.retries == 0 for s in stats)
    return url, bank_rows(url)


@pytest.fixture
def short_waits():
    """Quick pool timeouts for one test (a down server answers each borrower within ~0.5 s), put back after."""
    before = pool.current()
    pool.configure(BankSettings(pool_size=3, pool_timeout_s=0.5, reconnect_s=0.5))
    yield
    pool.configure(before)


def test_a_server_restart_mid_ingest_is_ridden_out_and_the_bank_equals_an_uninterrupted_run(
        stream, clean, pg_server, short_waits):
    url = pg_server.database()
    applied, stopped, restarted = [], threading.Event(), threading.Event()

    def restart() -> None:
        pg_server.pause()  # ``pg_ctl stop -m fast``: open sessions (a group's transaction among them) are ended
        stopped.set()
        time.sleep(1.0)
        pg_server.resume()
        restarted.set()

    def on_group(report) -> None:
        applied.append(report.group_id)
        if len(applied) == 3:  # the stop lands in the group in flight, wherever in it it falls
            threading.Thread(target=restart).start()
        elif len(applied) > 3:
            stopped.wait(30)  # so the group after that one surely meets the server down, however fast the groups

    with open_bank(url, MemoEmbedder(HashEmbedder())) as bank:
        updater = Updater(bank, RulesPolicy(), HiCoMERSettings())
        stats = [ingest_team(updater, stream.teams[t], on_group=on_group, outage_retry_s=30)
                 for t in sorted(stream.teams)]
    assert restarted.wait(30)
    print(f"retries {[s.retries for s in stats]}, waited {[round(s.outage_s, 1) for s in stats]} s")
    assert [s.error for s in stats] == [None, None]
    assert sum(s.retries for s in stats) > 0  # the outage was met, and ridden out
    assert sum(s.applied for s in stats) == stream.n_groups
    assert bank_rows(url) == clean[1]  # memories and decisions: nothing lost, nothing twice


def test_a_worker_that_opens_the_bank_during_a_restart_waits_for_the_server(pg_server, short_waits):
    """An ingest worker whose constructor met a restart died in it ("no connection within bank.pool_timeout_s"),
    and every team it was to take failed (seen on a busy machine, where the workers started late); it now waits
    for the server as a group's write does."""
    from pipelines.ingest_memories import open_through_outage

    url = pg_server.database()
    pg_server.pause()
    back = threading.Timer(1.5, pg_server.resume)
    back.start()
    try:
        with open_through_outage(url, HashEmbedder(), 30) as bank:
            assert bank.teams() == []
    finally:
        back.join()
    pg_server.pause()
    try:
        with pytest.raises(BankUnavailable, match="still unavailable .* while opening it for an ingest worker"):
            open_through_outage(url, HashEmbedder(), 1.0)
    finally:
        pg_server.resume()


def test_a_commit_whose_answer_is_lost_counts_once(stream, clean, pg_url, monkeypatch):
    """The server goes away during ``COMMIT`` after the group is in: the retry finds it applied by that very
    attempt, reports it applied (decisions read back), and writes nothing twice."""
    url, write, lost = pg_url(), PostgresBackend.write_group, []
    team = sorted(stream.teams)[0]
    victim = stream.teams[team][4].group_id

    def losing_commit(self, group, *args):  # the group's statement and COMMIT (``pg_apply``), then no answer
        out = write(self, group, *args)
        if not lost and group.group_id == victim:
            lost.append(victim)
            raise BankUnavailable(f"{self.where}: the database is unavailable (AdminShutdown): retry")
        return out

    monkeypatch.setattr(PostgresBackend, "write_group", losing_commit)
    with open_bank(url, MemoEmbedder(HashEmbedder())) as bank:
        stats = ingest_stream(Updater(bank, RulesPolicy(), HiCoMERSettings()), stream)
    monkeypatch.undo()
    with open_bank(clean[0]) as bank:
        clean_stats = [bank.stats(t) for t in sorted(stream.teams)]
    assert lost == [victim]
    assert [(s.applied, s.skipped, s.decisions, s.retries, s.error) for s in stats] == [
        (c["groups"], 0, c["decisions"], int(i == 0), None) for i, c in enumerate(clean_stats)]
    assert bank_rows(url) == clean[1]


def test_a_server_that_stays_away_stops_with_one_line_naming_the_bank():
    where, waits = "postgresql://memgraft@localhost/bank", []
    clock = lambda: sum(waits)  # noqa: E731 - time passes only while the retry waits

    def down():
        raise BankUnavailable(f"{where}: the database is unavailable (OperationalError: connection refused): retry")

    with pytest.raises(BankUnavailable) as err:
        ride_out(down, 10.0, where, "applying team 'ops' group 'g7'", sleep=waits.append, clock=clock)
    text = str(err.value)
    assert "\n" not in text and text.startswith(where) and "'g7'" in text and "outage_retry_s=10)" in text
    assert "connection refused" in text and text.count(where) == 1
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0])  # doubling, capped; 9.1 s of 10
    assert "8 retries over 9.1s" in text


def _hold_the_third_group(url: str) -> None:
    """Make the bank's first try at its third group wait 20 s inside its transaction, so the restart surely lands
    mid-run: a 12-group ingest once finished before a watcher polling every 0.1 s saw 2 groups in. The count is a
    sequence because ``nextval`` is not rolled back, so the retried group does not wait again."""
    import psycopg

    with open_bank(url):  # the bank's tables
        pass
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("""
            CREATE SEQUENCE test_groups_tried;
            CREATE FUNCTION test_hold_third() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF nextval('test_groups_tried') = 3 THEN PERFORM pg_sleep(20); END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER test_hold_third AFTER INSERT ON groups FOR EACH ROW EXECUTE FUNCTION test_hold_third();
        """)


@pytest.mark.slow
def test_the_ray_pipeline_rides_out_a_restart(ray_local, settings, pg_server, tmp_path):
    """``ingest_memories.py`` on a PostgreSQL bank, the server restarted once a few groups are in: no team
    fails, the summary counts the retried writes, and the bank equals one process's uninterrupted run's."""
    from memgraft.models.embedder import load_embedder
    from pipelines.ingest_memories import run_ingest

    s = settings.model_copy(deep=True)
    s.hicomer.updater_policy, s.models.embedder_dtype = "rules", "float32"
    s.bank = BankSettings(pool_size=3, pool_timeout_s=0.5, reconnect_s=0.5, outage_retry_s=30)
    path = generate(seed=5, teams=2, groups=6).write(tmp_path / "ds")["stream"]
    clean, url = pg_server.database(), pg_server.database()
    with open_bank(clean, MemoEmbedder(load_embedder(s))) as bank:
        ingest_stream(Updater(bank, RulesPolicy(), s.hicomer), read_stream(path))
    _hold_the_third_group(url)
    restarted = threading.Event()

    def restart_once_some_are_in() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open_bank(url) as bank:
                if sum(bank.stats(t)["groups"] for t in bank.teams()) >= 2:
                    break
            time.sleep(0.1)
        pg_server.pause()  # the third group's transaction is open (held by the trigger): the stop ends it
        time.sleep(1.0)
        pg_server.resume()
        restarted.set()

    watcher = threading.Thread(target=restart_once_some_are_in)
    watcher.start()
    summary = run_ingest(s, str(path), url, workers=1)
    watcher.join(timeout=120)
    assert restarted.is_set()
    assert summary["failed_teams"] == 0 and summary["applied"] == 12 and summary["outage_retries"] > 0, summary
    assert bank_rows(url) == bank_rows(clean)
