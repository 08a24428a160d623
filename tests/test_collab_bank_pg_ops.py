"""Running a PostgreSQL bank for real: a server restart under load, one pool per process, timeouts.

These restart the session's scratch server or hold its locks, so they use their own databases on it.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memgraft.collab.bank import BankTimeout, BankUnavailable, GroupAlreadyApplied, MemoryBank
from memgraft.collab.bank import pool
from memgraft.collab.types import MemoryGroup
from memgraft.config import BankSettings
from memgraft.models.reranker import CosineReranker
from serving import errors
from serving.service import AlreadyApplied, Models, Service
from serving.settings import load_profile
from tests.collab_bank_helpers import group, raw_connection
from tests.doubles import HashEmbedder, ScriptedLLM

TEAMS = ("ops", "lab", "hr")


@pytest.fixture
def bank_settings():
    """Process-wide pool settings for one test, put back after (pools already made are resized back)."""
    before = pool.current()
    yield lambda **kw: pool.configure(BankSettings(**kw))
    pool.configure(before)


def _services(settings, url: str, n: int) -> list[Service]:
    s = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": "rules",
                                                                                   "conflict_judge": "rules"}),
                                    "bank": BankSettings(pool_size=3, pool_timeout_s=2.0, reconnect_s=1.0)})
    _, serving = load_profile("local", [f"serving.banks_url={url}"])
    embedder = HashEmbedder()
    return [Service(s, serving, Models(llm=ScriptedLLM(lambda _r: "plain"), embedder=embedder,
                                       reranker=CosineReranker(embedder))) for _ in range(n)]


def _group(team: str, i: int) -> MemoryGroup:
    return MemoryGroup.model_validate({
        "team": team, "group_id": f"{team}-{i}", "time": f"2025-01-01T{i // 60:02d}:{i % 60:02d}:00",
        "memories": [{"memory_id": f"{team}-{i}-m", "type": "team", "author": "a",
                      "content": f"Fact {i} of team {team}: the rota moved to slot {i}."}]})


def test_a_server_restart_under_load_loses_nothing_and_every_team_comes_back(pg_server, settings, bank_settings):
    """Two replicas (Services) write and search three teams while the server is stopped (``pg_ctl stop -m
    fast``) and started again: while it is down every failure is a named 503 (``BankUnavailable``/``BankTimeout``,
    answered with Retry-After), once it is back every team is served again, and every acknowledged group is in
    the bank exactly once (a group whose answer was lost is sent again and is then found applied)."""
    from serving.schemas import SearchRequest

    url = pg_server.database()
    replicas = _services(settings, url, 2)
    for team in TEAMS:
        replicas[0].add_group(team, _group(team, 0))
    acked: dict[str, list[str]] = defaultdict(list)
    log: list[tuple[float, str, str, str]] = []  # (time, thread, "ok" or the error's name, op)
    unexpected: list[BaseException] = []
    stop = threading.Event()

    def writer(team: str, r: int) -> None:
        i, name = 1, f"w-{team}"
        while not stop.is_set() and i < 500:
            try:
                replicas[(i + r) % 2].add_group(team, _group(team, i))
                acked[team].append(f"{team}-{i}")
                log.append((time.monotonic(), name, "ok", "write"))
                i += 1
            except (AlreadyApplied, GroupAlreadyApplied):  # committed, but the answer was lost: it counts once
                acked[team].append(f"{team}-{i}")
                i += 1
            except (BankUnavailable, BankTimeout) as err:
                log.append((time.monotonic(), name, type(err).__name__, "write"))
                time.sleep(0.1)  # the client's Retry-After, shortened
            except BaseException as err:  # pragma: no cover - reported below
                unexpected.append(err)
                return

    def searcher(team: str) -> None:
        name = f"s-{team}"
        while not stop.is_set():
            try:
                replicas[1].search(team, SearchRequest(query="Where is the rota?", k=3))
                log.append((time.monotonic(), name, "ok", "search"))
            except (BankUnavailable, BankTimeout) as err:
                log.append((time.monotonic(), name, type(err).__name__, "search"))
                time.sleep(0.1)
            except BaseException as err:  # pragma: no cover - reported below
                unexpected.append(err)
                return
            time.sleep(0.02)

    threads = [threading.Thread(target=writer, args=(t, i)) for i, t in enumerate(TEAMS)]
    threads += [threading.Thread(target=searcher, args=(t,)) for t in TEAMS]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        down = time.monotonic()
        pg_server.pause()
        time.sleep(2.0)
        pg_server.resume()
        up = time.monotonic()
        time.sleep(5.0)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not unexpected, unexpected
    names = {n for _, n, _, _ in log}
    assert names == {f"{k}-{t}" for k in "ws" for t in TEAMS}
    failed = [e for e in log if e[2] != "ok"]
    assert failed and all(down <= e[0] for e in failed)  # the restart was felt, and only by then
    back = {}
    for name in names:
        mine = [e for e in log if e[1] == name]
        first_ok = next(e[0] for e in mine if e[0] > up and e[2] == "ok")  # served again
        assert all(e[2] == "ok" for e in mine if e[0] > first_ok), name  # and stays served
        assert any(e[2] == "ok" for e in mine if e[0] < down), name  # it was served before too
        back[name] = round(first_ok - up, 2)
    print(f"served again after the server's return (s): {back}; failures while down: {len(failed)}")
    bank = MemoryBank(url)
    try:
        for team in TEAMS:
            conn, _ = raw_connection(bank, team)
            with conn:
                rows = conn.execute("SELECT group_id FROM groups WHERE team = %s", (team,)).fetchall()
                mems = conn.execute("SELECT COUNT(*), COUNT(DISTINCT memory_id) FROM memories WHERE team = %s",
                                    (team,)).fetchone()
            applied = sorted(r[0] for r in rows)
            assert applied == sorted([f"{team}-0"] + acked[team]), team  # nothing acknowledged lost, none twice
            assert mems == (len(applied), len(applied))
    finally:
        bank.close()
        for r in replicas:
            r.close()


def test_a_named_503_with_retry_after_for_a_database_away():
    """What the service answers for each: 503 with Retry-After and the error's name, never a 400 or a hang."""
    app = FastAPI()
    errors.install(app)

    @app.get("/{kind}")
    def fail(kind: str):
        raise {"away": BankUnavailable("the database is unavailable: retry"),
               "slow": BankTimeout("a lock was not granted within bank.lock_timeout_s=1.0")}[kind]

    with TestClient(app) as client:
        for kind, name in (("away", "BankUnavailable"), ("slow", "BankTimeout")):
            r = client.get(f"/{kind}")
            assert r.status_code == 503 and r.headers["Retry-After"] == "1" and r.json()["error"] == name


def _client_connections(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchone()[0]


def test_many_teams_share_one_pool_of_connections(pg_server, bank_settings):
    """300 teams, each its own bound bank in one process, written and searched from 8 threads at once: the
    database never sees more connections than ``bank.pool_size`` (before: one per team, held for good)."""
    bank_settings(pool_size=4)
    url = pg_server.database()
    teams = [f"t{i:03d}" for i in range(300)]
    banks = {t: MemoryBank(url, HashEmbedder(), team=t) for t in teams}
    peak, done, failures = [0], threading.Event(), []

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _client_connections(url) - 0)
            time.sleep(0.05)

    def work(part: list[str]) -> None:
        try:
            for t in part:
                banks[t].apply_group(group(t, "g0", 0, (f"{t}-m", "team", f"Team {t} meets on day {t[-1]}")))
                assert [m.memory_id for m, _ in banks[t].search(t, "meets", 3)] == [f"{t}-m"]
        except BaseException as err:  # pragma: no cover - reported below
            failures.append(err)

    watcher = threading.Thread(target=watch)
    watcher.start()
    workers = [threading.Thread(target=work, args=(teams[i::8],)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    done.set()
    watcher.join()
    assert not failures, failures[:3]
    assert 1 <= peak[0] <= 4, peak  # the watcher's own connection is not counted
    assert all(banks[t].stats(t)["groups"] == 1 for t in teams[::37])
    for b in banks.values():
        b.close()
    # the last bank closed gives the pool's connections back; a closed connection's server process (the watcher's
    # last one too) leaves pg_stat_activity a moment after its client closed it: seen once on 2 busy CI cores
    deadline = time.monotonic() + 5
    while _client_connections(url) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _client_connections(url) == 0


def test_a_stalled_writer_is_a_named_timeout_not_a_hang(pg_server, bank_settings):
    """A writer that holds its team's lock and stalls: the team's next writer gets ``BankTimeout`` after
    ``bank.lock_timeout_s`` (nothing written), another team's writer is not held up, a slow statement is
    cut at ``bank.statement_timeout_s``, and the stalled transaction is ended by the server after
    ``bank.idle_in_transaction_s``, which frees the team."""
    bank_settings(pool_size=4, lock_timeout_s=0.3, statement_timeout_s=0.5, idle_in_transaction_s=1.5)
    url = pg_server.database()
    stalled, other = MemoryBank(url, HashEmbedder()), MemoryBank(url, HashEmbedder())
    try:
        other.apply_group(group("ops", "g0", 0, ("m0", "team", "The rota is on the wall")))
        with pytest.raises(BankTimeout, match="statement_timeout"):
            with other.transaction("ops") as db:
                db.execute("SELECT pg_sleep(2)")
        held = stalled.transaction("ops")
        held.__enter__()  # the team's lock, and then nothing
        with pytest.raises(BankTimeout, match="lock_timeout"):
            other.apply_group(group("ops", "g1", 1, ("m1", "team", "The rota moved")))
        assert not other.is_applied("ops", "g1")
        other.apply_group(group("lab", "g0", 0, ("l0", "team", "Lab notes")))  # another team: no wait
        time.sleep(2.0)  # past idle_in_transaction_s: the server ends the stalled session
        with pytest.raises((BankTimeout, BankUnavailable)) as caught:
            held.__exit__(None, None, None)  # its COMMIT finds the session gone
        print(f"the stalled writer's commit: {caught.type.__name__}: {caught.value}")
        other.apply_group(group("ops", "g1", 1, ("m1", "team", "The rota moved")))  # the team is free again
        assert other.stats("ops")["groups"] == 2
    finally:
        stalled.close()
        other.close()


def test_writers_of_one_team_take_turns_and_plan_each_group_once(pg_url, monkeypatch):
    """Three writers (each its own bank, as three processes are) ingest the same team's stream at once: with the
    team's planning turn, each group is planned once (before: a writer planned groups another then committed,
    and re-planned after StaleDecision), and the bank equals one writer's."""
    from memgraft.collab.data.generator import generate
    from memgraft.collab.ingest import ingest_team, read_stream
    from memgraft.collab.maintain.policies import RulesPolicy
    from memgraft.collab.maintain.updater import MemoEmbedder, Updater
    from memgraft.config import HiCoMERSettings

    data = generate(seed=4, teams=1, groups=10)
    import tempfile
    from pathlib import Path

    stream = read_stream(data.write(Path(tempfile.mkdtemp()) / "ds")["stream"])
    [team] = stream.teams
    groups = stream.teams[team]
    clean = MemoryBank(pg_url(), MemoEmbedder(HashEmbedder()))
    ingest_team(Updater(clean, RulesPolicy(), HiCoMERSettings()), groups)
    plans: list[str] = []
    real_plan = Updater.plan

    def counted(self, group):
        plans.append(group.group_id)
        return real_plan(self, group)

    monkeypatch.setattr(Updater, "plan", counted)
    url, failures = pg_url(), []
    banks = [MemoryBank(url, MemoEmbedder(HashEmbedder())) for _ in range(3)]

    def write(bank: MemoryBank) -> None:
        try:
            ingest_team(Updater(bank, RulesPolicy(), HiCoMERSettings()), groups)
        except BaseException as err:  # pragma: no cover - reported below
            failures.append(err)

    threads = [threading.Thread(target=write, args=(b,)) for b in banks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert sorted(plans) == sorted(g.group_id for g in groups)  # every group planned once, by one writer
    state = lambda b: [(m.memory_id, m.maintained, m.valid) for m in b.memories(team)]  # noqa: E731
    assert state(banks[0]) == state(clean) and len(banks[0].decisions(team)) == len(clean.decisions(team))
    for b in banks + [clean]:
        b.close()


def test_a_group_is_sent_once_on_a_connection_the_server_has_not_ended(pg_url):
    """A PostgreSQL group is one statement in autocommit (``pg_apply``), sent by ``pool.write_once``: pooled
    connections the server ended (terminated backends, as a restart leaves them) are told before anything is sent
    and replaced, so the write goes in once without an error; a write whose answer is lost is not sent again (the
    bank says ``BankUnavailable``; ``outage`` tells whether it went in)."""
    import psycopg

    url = pg_url()
    with MemoryBank(url, HashEmbedder()) as bank:
        bank.apply_group(group("ops", "g0", 0, ("m0", "team", "The rota is on the wall")))
        with psycopg.connect(url, autocommit=True) as admin:  # the bank's own role may end its own sessions
            ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE usename = current_user AND pid <> pg_backend_pid()").fetchone()[0]
        assert ended >= 1
        time.sleep(0.2)  # the server's goodbye reaches the idle sockets
        bank.apply_group(group("ops", "g1", 1, ("m1", "team", "The rota moved")))
        assert bank.stats("ops")["groups"] == 2 and bank.memory("ops", "m1") is not None
        calls = []

        def lost(conn):
            calls.append(conn)
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        with pytest.raises(BankUnavailable, match="unavailable"):
            pool.write_once(bank._db._shared, bank.where, lost)
        assert len(calls) == 1
