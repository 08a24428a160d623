"""Team decisions in people's words -> a HiCoMER dataset with gold (the paper's own kind of memory).

Why: the real conversions are dated facts about named subjects; what a team's memory mostly
holds is decisions, protocols and plans that are replaced in plain words ("Deploys now happen
on Thursdays instead of Tuesdays.", "Buffer Y replaces buffer X in the binding assays from
today", "We stopped using Jira"), beside decisions that share words and are never replaced,
and members' notes that rely on a decision the team just dropped. The threads are written by
hand (:mod:`.decision_threads`); this module turns them into the four files:

* one group per team and date, holding every state and note of that date;
* **intra**: a note dated like a state of its thread is judged against that team memory:
  contradiction/revise when it restates another value ("Ordered more Compound A ..." in the
  group that drops Compound A), compatible/keep when the same;
* **inter**: a new state revises every earlier valid memory of its thread with another value
  (the team's and the members' notes), keeps the ones with the same value, and is judged
  neutral/keep against up to ``neutrals`` valid memories of the most alike other threads;
* **questions**: each thread's question "now" (the team's last date) and as of the midpoint
  of every replaced state's life, with the valid and outdated ids then.

Split: by team, a salted hash of ``decisions:<team>`` (:func:`memgraft.collab.data.splits.half_of`): ``dev``
binding-lab, product-squad, data-eng, and infra-ops, growth-team, cell-lab (added later: measures and slots
changed in plain words, labelled freezers; developed on); ``test`` web-platform (the deploy case), synthesis-lab
(the Compound A note), support-desk. ``all`` keeps every team.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import datetime
from typing import Sequence

from memgraft.collab.data import Dataset, Ledger, MemoryState
from memgraft.collab.data.decision_threads import TEAMS, TeamSet, Thread
from memgraft.collab.data.splits import half_of

SPLITS = ("dev", "test", "all")
_STOP = {"the", "a", "an", "do", "does", "we", "our", "is", "are", "what", "which", "when", "how", "who", "of",
         "for", "to", "in", "on", "at", "get", "gets"}  # fmt: skip


def teams_of(split: str) -> list[TeamSet]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return [t for t in TEAMS if split == "all" or half_of(f"decisions:{t.team}") == split]


def _iso(day: str) -> str:
    return f"{day}T09:00:00"


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP)


def _alike(a: Thread, b: Thread) -> float:
    x, y = _words(a.question), _words(b.question)
    return len(x & y) / len(x | y) if x | y else 0.0


def _value_at(thread: Thread, day: str) -> str | None:
    held = [v for d, v, _ in thread.states if d <= day]
    return held[-1] if held else None


def _check(team: TeamSet) -> None:
    for th in team.threads:
        days = [d for d, _, _ in th.states]
        if days != sorted(set(days)):
            raise ValueError(f"{team.team}/{th.key}: states must have distinct dates in order")
        for d, v, _ in th.notes:
            state_now = next((s for s in th.states if s[0] == d), None)
            if state_now is None and _value_at(th, d) != v:
                raise ValueError(f"{team.team}/{th.key}: the note of {d} restates {v!r}, not what holds then")


class _Build:
    def __init__(self, seed: int, neutrals: int) -> None:
        self.ledger, self.questions, self.counts = Ledger(), [], Counter()
        self.rng, self.neutrals = random.Random(f"decisions:{seed}"), neutrals
        self.by_thread: dict[tuple[str, str], list[MemoryState]] = {}

    def team(self, team: TeamSet) -> None:
        _check(team)
        threads = {th.key: th for th in team.threads}
        events: dict[str, list[tuple[Thread, str, str, str]]] = {}  # day -> (thread, value, text, role)
        for th in team.threads:
            for d, v, text in th.states:
                events.setdefault(d, []).append((th, v, text, "record"))
            for d, v, text in th.notes:
                state_now = next((s for s in th.states if s[0] == d), None)
                role = "note" if state_now is None else ("confirm" if state_now[1] == v else "stale")
                events.setdefault(d, []).append((th, v, text, role))
        for g, day in enumerate(sorted(events)):
            t, gid = _iso(day), f"{team.team}-g{g:03d}"
            earlier = [m for m in self.ledger.team_states(team.team) if m.outdated_at is None]
            made = []
            for th, v, text, role in events[day]:
                record = role == "record"
                made.append(MemoryState(
                    memory_id="", team=team.team, group_id=gid, time=t, type="team" if record else "individual",
                    author=team.lead if record else self.rng.choice(team.members), content=text,
                    kind=th.kind if record else "log", topic=th.key, value=v,
                    extra={"subject": th.key, "answers": [v], "role": role, "domain": team.domain}))
            self.rng.shuffle(made)
            for k, m in enumerate(made, start=1):
                m.memory_id = f"{gid}-m{k:02d}"
                self.by_thread.setdefault((team.team, m.topic or ""), []).append(m)
                self.counts[f"{m.extra['role']}_memories"] += 1
            self.ledger.add_group(team.team, gid, t, made)
            records = {m.topic: m for m in made if m.type == "team"}
            for note in (m for m in made if m.type == "individual" and m.topic in records):
                rec = records[note.topic]
                rel, act = ("compatible", "keep") if note.value == rec.value else ("contradiction", "revise")
                self.ledger.decide(note.memory_id, gid, t, "intra", [rec.memory_id], rel, act, rec.memory_id)
                self.counts[f"intra_{rel}"] += 1
            self._inter(team, threads, gid, t, earlier, list(records.values()))
        last = _iso(max(events))
        for th in team.threads:
            self._ask(team, th, th.question, last, "now")
            for (d, v, _), (nxt, _, _) in zip(th.states, th.states[1:]):
                a, b = datetime.fromisoformat(_iso(d)), datetime.fromisoformat(_iso(nxt))
                mid = a + (b - a) / 2
                text = f"As of {mid:%B} {mid.day}, {mid.year}, {th.question[:1].lower()}{th.question[1:]}"
                self._ask(team, th, text, mid.strftime("%Y-%m-%dT%H:%M:%S"), "as_of")

    def _inter(self, team: TeamSet, threads: dict[str, Thread], gid: str, t: str, earlier: list[MemoryState],
               records: list[MemoryState]) -> None:  # fmt: skip
        judged: set[str] = set()
        for rec in records:
            for old in (m for m in earlier if m.topic == rec.topic):
                same = old.value == rec.value
                rel, act = ("compatible", "keep") if same else ("contradiction", "revise")
                self.ledger.decide(old.memory_id, gid, t, "inter", [rec.memory_id], rel, act, rec.memory_id)
                judged.add(old.memory_id)
                self.counts["superseded" if not same else "inter_compatible"] += 1
        for rec in records:
            me = threads[rec.topic or ""]
            others = sorted((th for th in team.threads if th.key != me.key), key=lambda th: -_alike(me, th))
            picked = 0
            for th in others:
                for m in (m for m in earlier if m.topic == th.key and m.memory_id not in judged):
                    if picked < self.neutrals:
                        self.ledger.decide(m.memory_id, gid, t, "inter", [rec.memory_id], "neutral", "keep")
                        judged.add(m.memory_id)
                        picked += 1
                        self.counts["inter_neutral"] += 1

    def _ask(self, team: TeamSet, th: Thread, text: str, t: str, asked: str) -> None:
        mems = self.by_thread.get((team.team, th.key), [])
        value = _value_at(th, t[:10])
        n = sum(q["team"] == team.team for q in self.questions) + 1
        self.questions.append({
            "id": f"{team.team}-q{n:03d}", "team": team.team, "question": text, "time": t,
            "valid": [m.memory_id for m in mems if m.valid_at(t)],
            "outdated": [m.memory_id for m in mems if m.outdated_by(t)],
            "answer": value, "qtype": "decision", "asked": asked, "answers": [value], "subject": th.key,
        })  # fmt: skip
        self.counts[f"questions_{asked}"] += 1


def build(split: str = "all", *, seed: int = 0, neutrals: int = 2, teams: Sequence[TeamSet] | None = None) -> Dataset:
    """The decisions dataset of ``split``'s teams (or of ``teams``)."""
    b = _Build(seed, neutrals)
    chosen = list(teams) if teams is not None else teams_of(split)
    for team in chosen:
        b.team(team)
    b.counts["teams"] = len(chosen)
    b.counts["threads"] = sum(len(t.threads) for t in chosen)
    b.counts["replaced_decisions"] = sum(len(th.states) - 1 for t in chosen for th in t.threads)
    data = b.ledger.dataset(b.questions, info={"source": "decisions", "split": split, "seed": seed,
                                               "teams": [t.team for t in chosen]})
    data.info["counts"] = dict(sorted(b.counts.items()))
    return data

