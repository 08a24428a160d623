"""memgraft.progress: off a terminal, one line per interval at most and one at the end, never a wall."""

from __future__ import annotations

import io

from memgraft.progress import Progress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_throttled_to_one_per_interval_and_one_at_the_end():
    clock, out = Clock(), io.StringIO()
    with Progress("embed", total=1000, unit="texts", interval_s=5.0, stream=out, clock=clock) as bar:
        for _ in range(20):  # 20 advances over 10 s of the fake clock: two intervals
            clock.now += 0.5
            bar.advance(50)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and lines[-1].endswith(" - done")
    assert lines[0].startswith("embed: 500/1,000 texts (50%), 100.0 texts/s, 5s elapsed, about 5s left")
    assert lines[-1].startswith("embed: 1,000/1,000 texts (100%)")


def test_disabled_prints_nothing_and_an_unknown_total_has_no_percentage():
    out = io.StringIO()
    with Progress("quiet", total=3, stream=out, enabled=False) as bar:
        bar.advance(3)
    assert out.getvalue() == "" and bar.done == 3
    with Progress("open-ended", total=None, unit="rows", stream=out, clock=Clock()) as bar:
        bar.advance(7)
    assert out.getvalue() == "open-ended: 7 rows, 0s elapsed - done\n"


def test_a_stage_that_fails_ends_without_done():
    out = io.StringIO()
    try:
        with Progress("index", total=2, stream=out, clock=Clock()) as bar:
            bar.advance()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert out.getvalue() == "index: 1/2 items (50%), 0s elapsed\n"


def test_a_terminal_gets_a_bar_not_lines():
    out = io.StringIO()
    with Progress("bar", total=2, stream=out, bar=True) as bar:
        bar.advance(2)
    assert " - done" not in out.getvalue() and bar.done == 2


def test_a_long_wait_prints_a_heartbeat_not_a_line_per_tick():
    clock, out = Clock(), io.StringIO()
    with Progress("answer", total=3, unit="questions", interval_s=5.0, heartbeat_s=30.0, stream=out,
                  clock=clock) as bar:
        for _ in range(12):  # a minute of ticks every 5 s, nothing finished
            clock.now += 5.0
            bar.tick()
        bar.advance()
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["answer: 0/3 questions (0%), 30s elapsed", "answer: 0/3 questions (0%), 1m00s elapsed"]
    assert len(lines) == 3 and lines[-1].endswith(" - done")
