"""The request loops of serve_search: concurrent searches and mixed reads/writes, in process and over HTTP."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

from bench.common import percentile


def summary(latencies_ms: list[float], wall_s: float, errors: int) -> dict[str, Any]:
    s = latencies_ms
    return {"n": len(s), "errors": errors, "p50_ms": percentile(s, 0.50), "p99_ms": percentile(s, 0.99),
            "mean_ms": statistics.mean(s) if s else float("nan"), "rps": len(s) / wall_s if wall_s else 0.0,
            "wall_s": wall_s}


def workload(questions: list[tuple[str, str]], n: int, offset: int) -> list[tuple[str, str]]:
    """``n`` (team, question) pairs, each text made distinct by a serial."""
    return [(team, f"{q} (case {offset + i})") for i, (team, q) in
            ((i, questions[(offset + i) % len(questions)]) for i in range(n))]


# -- the two paths ---------------------------------------------------------------------------------


def in_process_level(memories: dict[str, Any], jobs: list[tuple[str, str]], level: int, k: int,
                     max_seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop_at = time.perf_counter() + max_seconds

    def one(job: tuple[str, str]) -> None:
        nonlocal errors
        if time.perf_counter() > stop_at:
            return
        t = time.perf_counter()
        try:
            memories[job[0]].search(job[0], job[1], k=k)
        except Exception:  # noqa: BLE001 - counted, not fatal
            with lock:
                errors += 1
            return
        with lock:
            latencies.append((time.perf_counter() - t) * 1000)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=level) as pool:
        list(pool.map(one, jobs))
    return summary(latencies, time.perf_counter() - t0, errors)


async def served_level(base_url: str, tokens: dict[str, str], jobs: list[tuple[str, str]], level: int, k: int,
                       max_seconds: float) -> dict[str, Any]:
    """Searches only, ``level`` at once over HTTP."""
    reads = [("read", team, question) for team, question in jobs]
    lat, errors, wall = await _served(base_url, tokens, reads, level, k, max_seconds, timeout=120)
    return summary(lat["read"], wall, errors["read"])


async def _served(base_url: str, tokens: dict[str, str], jobs: list[tuple], level: int, k: int, max_seconds: float,
                  timeout: float) -> tuple[dict[str, list[float]], dict[str, int], float]:
    """Run ``(kind, team, payload)`` jobs, ``level`` at once: latencies (ms) and errors by kind, and the wall time."""
    import httpx

    lat: dict[str, list[float]] = {"read": [], "write": []}
    errors = {"read": 0, "write": 0}
    queue: asyncio.Queue[tuple] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    stop_at = time.perf_counter() + max_seconds
    limits = httpx.Limits(max_connections=level, max_keepalive_connections=level)
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) as client:

        async def worker() -> None:
            while not queue.empty() and time.perf_counter() < stop_at:
                kind, team, payload = queue.get_nowait()
                path, body = ("search", {"query": payload, "k": k}) if kind == "read" else ("groups", payload)
                t = time.perf_counter()
                r = await client.post(f"/v1/teams/{team}/{path}", json=body,
                                      headers={"Authorization": f"Bearer {tokens[team]}"})
                if r.status_code == 200:
                    lat[kind].append((time.perf_counter() - t) * 1000)
                else:
                    errors[kind] += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(level)))
    return lat, errors, time.perf_counter() - t0


def mixed_jobs(questions: list[tuple[str, str]], n: int, offset: int, every: int, tag: str, *, memories: int = 2,
               chars: int = 0, texts: dict[str, list[str]] | None = None) -> list[tuple]:
    """``n`` jobs: ``("write", team, group)`` every ``every``-th, else ``("read", team, question)``.

    A group holds ``memories`` memories (the first a team memory); with ``chars`` each is an ordinary note of
    about that many characters, the team's own stream memories (``texts``) run together, so the history search
    and the judge meet the subjects they would in use. Without, two one-line memories."""
    jobs: list[tuple] = []
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")  # after the seeded history, not in the future
    for i, (team, q) in enumerate(workload(questions, n, offset)):
        if i % every:
            jobs.append(("read", team, q))
            continue
        gid = f"{team}-{tag}-{offset + i}"
        if chars and texts:
            contents = [_note(texts[team], (offset + i) * memories + j, chars, f"{gid} note {j}")
                        for j in range(memories)]
        else:
            contents = [f"From now on {q} (rule {i})", f"Noted: {q}"] + [f"Noted ({j}): {q}" for j in
                                                                       range(2, memories)]
        jobs.append(("write", team, {"team": team, "group_id": gid, "time": now, "memories": [
            {"memory_id": f"{gid}-m{j}", "type": "team" if j == 0 else "individual", "author": "bench",
             "content": c} for j, c in enumerate(contents[:memories])]}))
    return jobs


def _note(pool: list[str], start: int, chars: int, head: str) -> str:
    """About ``chars`` characters: ``head``, then the pool's texts from ``start`` on (wrapping)."""
    parts, size, k = [head + ":"], len(head) + 1, start * 7
    while size < chars:
        text = pool[k % len(pool)]
        parts.append(text)
        size += len(text) + 1
        k += 1
    return " ".join(parts)[:chars]


def mixed_summary(lat: dict[str, list[float]], wall_s: float, errors: dict[str, int]) -> dict[str, Any]:
    return {kind: summary(lat[kind], wall_s, errors[kind]) for kind in ("read", "write")}


def in_process_mixed(memories: dict[str, Any], jobs: list[tuple], level: int, k: int,
                     max_seconds: float) -> dict[str, Any]:
    lat: dict[str, list[float]] = {"read": [], "write": []}
    errors = {"read": 0, "write": 0}
    lock, turns = threading.Lock(), {team: threading.Lock() for team in memories}
    stop_at = time.perf_counter() + max_seconds

    def one(job: tuple) -> None:
        kind, team, payload = job
        if time.perf_counter() > stop_at:
            return
        t = time.perf_counter()
        try:
            if kind == "read":
                memories[team].search(team, payload, k=k)
            else:
                with turns[team]:
                    memories[team].add_group(payload)
        except Exception:  # noqa: BLE001 - counted, not fatal
            with lock:
                errors[kind] += 1
            return
        with lock:
            lat[kind].append((time.perf_counter() - t) * 1000)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=level) as pool:
        list(pool.map(one, jobs))
    return mixed_summary(lat, time.perf_counter() - t0, errors)


async def served_mixed(base_url: str, tokens: dict[str, str], jobs: list[tuple], level: int, k: int,
                       max_seconds: float) -> dict[str, Any]:
    """Searches and group writes, ``level`` at once over HTTP."""
    lat, errors, wall = await _served(base_url, tokens, jobs, level, k, max_seconds, timeout=300)
    return mixed_summary(lat, wall, errors)
