"""A seeded generator of collaborative memory streams with gold maintenance labels.

Why synthetic: the HiCoMER paper's datasets are not public, and the updater, the
retriever and the metrics each need streams whose every label is known. The generator's
world is small and explicit: each team works in one domain (lab research, software
release, hospital ward, logistics) on a handful of *topics* (the incubation temperature,
the release branch, ...), each with a few possible *values*. A memory either asserts a
value for one topic or is a neutral distractor about nothing the team decides.

Per time-aligned group (one per day, the same days for every team):

* 1–2 **team memories** (decision, protocol, instruction) set a topic's value: a first
  setting, or a change that makes every earlier memory asserting the old value outdated
  (a **cross-time conflict**: relation contradiction, action revise, at the "inter" level).
* **Individual memories** (log, observation, attempt): ones that follow the value in force
  (compatible), neutral distractors, and sometimes one that asserts a different value for
  a topic the same group's team memory decides (a **same-time conflict**: the team memory
  wins, the individual one is revised at the "intra" level and is never valid).

The rule behind every label: a memory is valid while the value it asserts is the team's
current value for its topic; distractors stay valid. Gold decisions cover every
individual memory of each group (intra), every earlier valid memory on a topic the group
touches (inter; contradiction or compatible) and up to two earlier unrelated memories
(inter; neutral), which are what a top-K retrieval plausibly returns. Questions of the
paper's six types are asked as of a group's time, with that time's valid and outdated
memories on the question's topic as gold.

Everything draws from ``random.Random`` seeded with strings and iterates lists in a
fixed order, so the same arguments give byte-identical files (no set or hash order).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from memgraft.collab.data import Dataset, Ledger, MemoryState, Row
from memgraft.collab.data.vocabulary import AGENTS, DOMAINS, INDIVIDUAL, TEAM_CHANGE, TEAM_FIRST, Topic

BASE_TIME = datetime(2025, 1, 6, 9, 0, 0)
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
QUESTION_TYPES = (
    "fact_lookup",
    "procedure_validation",
    "conflict_diagnosis",
    "risk_warning",
    "next_step_decision",
    "protocol_consistency",
)


@dataclass(frozen=True)
class Settings:
    """What shapes a stream. The probabilities are per team decision (same-time conflict)
    and per team memory slot (change a set topic rather than set a new one)."""

    seed: int = 0
    teams: int = 3
    groups: int = 12
    questions_per_type: int = 2
    p_change: float = 0.5
    p_same_time_conflict: float = 0.35
    neutral_inter_per_group: int = 2


def time_of(group_index: int) -> str:
    return (BASE_TIME + timedelta(days=group_index)).strftime(TIME_FORMAT)


class _TeamBuilder:
    """Generates one team's groups into the shared ledger."""

    def __init__(self, ledger: Ledger, settings: Settings, index: int) -> None:
        self.ledger = ledger
        self.s = settings
        self.domain = DOMAINS[index % len(DOMAINS)]
        self.team = f"{self.domain.key}-{index}"
        self.rng = random.Random(f"memgraft-collab:{settings.seed}:{index}")
        self.agents = self.rng.sample(AGENTS, 4)
        self.lead = self.agents[0]
        self.current: dict[str, MemoryState] = {}  # topic name -> team memory in force

    # -- stream --------------------------------------------------------------------------

    def build(self) -> None:
        for g in range(self.s.groups):
            self._group(g)

    def _group(self, g: int) -> None:
        rng, dom = self.rng, self.domain
        gid, time = f"{self.team}-g{g:03d}", time_of(g)
        mems: list[MemoryState] = []

        def add(
            type_: str, kind: str, author: str, content: str, topic: Topic | None, value: str | None
        ) -> MemoryState:
            m = MemoryState(
                memory_id=f"{gid}-m{len(mems) + 1:02d}", team=self.team, group_id=gid, time=time,
                type=type_, author=author, content=content, kind=kind,
                topic=topic.name if topic else None, value=value, extra={"domain": dom.key},
            )  # fmt: skip
            mems.append(m)
            return m

        decided: dict[str, MemoryState] = {}
        for _ in range(1 if rng.random() < 0.6 else 2):
            set_ = [t for t in dom.topics if t.name in self.current and t.name not in decided]
            unset = [t for t in dom.topics if t.name not in self.current and t.name not in decided]
            change = bool(set_) and (not unset or rng.random() < self.s.p_change)
            topic = rng.choice(set_ if change else unset)
            kind = rng.choice(sorted(TEAM_FIRST))
            if change:
                old = self.current[topic.name].value
                value = rng.choice([v for v in topic.values if v != old])
                text = TEAM_CHANGE[kind].format(name=topic.name, value=value, old=old)
            else:
                value = rng.choice(topic.values)
                text = TEAM_FIRST[kind].format(name=topic.name, value=value)
            decided[topic.name] = add("team", kind, self.lead, text, topic, value)

        members = self.agents[1:]
        # same-time conflicts: a member acting on another value the day the team decides
        for name, team_mem in list(decided.items()):
            if rng.random() < self.s.p_same_time_conflict:
                topic = self._topic(name)
                prior = self.current.get(name)
                value = prior.value if prior else rng.choice([v for v in topic.values if v != team_mem.value])
                kind = rng.choice(["attempt", "log"])
                text = INDIVIDUAL[kind].format(work=dom.work, value=value, name=name)
                add("individual", kind, rng.choice(members), text, topic, value)
        in_force = {**{k: v.value for k, v in self.current.items()}, **{k: v.value for k, v in decided.items()}}
        for _ in range(rng.randint(1, 2)):  # compatible: following the value in force
            name = rng.choice(sorted(in_force))
            kind = rng.choice(sorted(INDIVIDUAL))
            text = INDIVIDUAL[kind].format(work=dom.work, value=in_force[name], name=name)
            add("individual", kind, rng.choice(members), text, self._topic(name), in_force[name])
        for _ in range(rng.randint(1, 2)):  # neutral distractors
            text = rng.choice(dom.distractors).format(n=rng.randint(2, 40))
            add("individual", text.split(":")[0].lower(), rng.choice(members), text, None, None)

        order = list(range(len(mems)))
        rng.shuffle(order)
        shuffled = [mems[i] for i in order]
        for new_id, m in enumerate(shuffled, start=1):  # ids follow the order in the group
            m.memory_id = f"{gid}-m{new_id:02d}"
        earlier = [m for m in self.ledger.team_states(self.team) if m.outdated_at is None]
        self.ledger.add_group(self.team, gid, time, shuffled)
        self._label(gid, time, shuffled, decided, earlier)
        self.current.update(decided)

    def _topic(self, name: str) -> Topic:
        return next(t for t in self.domain.topics if t.name == name)

    # -- gold ----------------------------------------------------------------------------

    def _label(
        self, gid: str, time: str, group: list[MemoryState], decided: dict[str, MemoryState], earlier: list[MemoryState]
    ) -> None:
        team_ids = [m.memory_id for m in group if m.type == "team"]
        for m in group:  # intra: each individual memory against the group's team memories
            if m.type != "individual":
                continue
            ruling = decided.get(m.topic or "")
            if ruling is None:
                self.ledger.decide(m.memory_id, gid, time, "intra", team_ids, "neutral", "keep")
            elif m.value != ruling.value:
                self.ledger.decide(
                    m.memory_id, gid, time, "intra", team_ids, "contradiction", "revise", ruling.memory_id
                )
            else:
                self.ledger.decide(m.memory_id, gid, time, "intra", team_ids, "compatible", "keep")

        followers: dict[str, list[str]] = {}  # topic -> this group's valid individual memories on it
        for m in group:
            if m.type == "individual" and m.topic and m.outdated_at is None:
                followers.setdefault(m.topic, []).append(m.memory_id)
        unrelated = []
        for old in earlier:  # inter: earlier memories the group touches
            ruling = decided.get(old.topic or "")
            if ruling is not None:
                if old.value != ruling.value:
                    rel, act = "contradiction", "revise"
                else:
                    rel, act = "compatible", "keep"
                self.ledger.decide(old.memory_id, gid, time, "inter", [ruling.memory_id], rel, act, ruling.memory_id)
            elif old.topic in followers:
                self.ledger.decide(old.memory_id, gid, time, "inter", followers[old.topic], "compatible", "keep")
            else:
                unrelated.append(old)
        k = min(self.s.neutral_inter_per_group, len(unrelated))
        for i in sorted(self.rng.sample(range(len(unrelated)), k)):
            self.ledger.decide(unrelated[i].memory_id, gid, time, "inter", team_ids, "neutral", "keep")

    # -- questions -----------------------------------------------------------------------

    def questions(self) -> list[Row]:
        rng, dom = self.rng, self.domain
        states = self.ledger.team_states(self.team)
        out: list[Row] = []
        # (time, topic) pairs a question can be asked about: a team memory rules the topic then
        asked_at = []
        for topic in dom.topics:
            on = [m for m in states if m.topic == topic.name]
            for g in range(self.s.groups):
                t = time_of(g)
                rule = [m for m in on if m.type == "team" and m.valid_at(t)]
                if rule:
                    asked_at.append((t, topic, rule[0], on, [m for m in on if m.outdated_by(t)]))
        for qtype in QUESTION_TYPES:
            needs_conflict = qtype in ("conflict_diagnosis", "risk_warning")
            candidates = [c for c in asked_at if c[4] or not needs_conflict]
            for t, topic, rule, on, stale in rng.sample(candidates, min(self.s.questions_per_type, len(candidates))):
                question, answer = self._ask(qtype, topic, rule, stale)
                valid = [m.memory_id for m in on if m.valid_at(t)]
                valid.sort(key=lambda i: self.ledger.states[i].type != "team")  # team memories first
                out.append(
                    {
                        "id": f"{self.team}-q{len(out) + 1:03d}",
                        "team": self.team,
                        "question": question,
                        "time": t,
                        "valid": valid,
                        "outdated": [m.memory_id for m in stale],
                        "answer": answer,
                        "qtype": qtype,
                        "topic": topic.name,
                        "domain": dom.key,
                    }
                )
        return out

    def _ask(self, qtype: str, topic: Topic, rule: MemoryState, stale: list[MemoryState]) -> tuple[str, str]:
        name, value, work, date = topic.name, rule.value, self.domain.work, rule.time[:10]
        olds = []
        for m in stale:
            if m.value not in olds:
                olds.append(m.value)
        if qtype == "fact_lookup":
            return f"What is the team's current {name}?", f"The current {name} is {value}."
        if qtype == "procedure_validation":
            asker = self.rng.choice(self.agents[1:])
            if olds and self.rng.random() < 0.5:
                probe = self.rng.choice(olds)
                q = f"{asker} wants to run the next {work} with {probe} as the {name}. Is that the valid procedure?"
                return q, f"No. {probe} is outdated; the valid {name} is {value}."
            q = f"{asker} wants to run the next {work} with {value} as the {name}. Is that the valid procedure?"
            return q, f"Yes. {value} is the valid {name}, set on {date}."
        if qtype == "conflict_diagnosis":
            q = f"The team's records disagree about the {name}. Which value holds now, and which records are outdated?"
            stale_values = " or ".join(olds)
            return q, f"{value} holds, set by the team {rule.kind} of {date}; records stating {stale_values} are outdated."
        if qtype == "risk_warning":
            pick = next((m for m in stale if m.type == "individual"), stale[0])
            q = f"What is the risk in following {pick.author}'s note from {pick.time[:10]} about the {name}?"
            return q, (
                f"It uses {pick.value} for the {name}, which is outdated since {(pick.outdated_at or '')[:10]}; "
                f"the current {name} is {value}."
            )
        if qtype == "next_step_decision":
            q = f"What {name} should the next {work} use?"
            return q, f"Use {value}: it is the team's current {name}, set on {date}."
        if qtype == "protocol_consistency":
            q = f"Which of the team's records on the {name} follow the current protocol, and which are outdated?"
            if olds:
                return q, f"The current {name} is {value}; records stating {' or '.join(olds)} are outdated."
            return q, f"All records on the {name} follow the current protocol: {value}."
        raise ValueError(f"unknown question type {qtype}")


def generate(settings: Settings | None = None, **overrides: Any) -> Dataset:
    """Generate a dataset; ``generate(seed=1, teams=2)`` is ``generate(Settings(seed=1, teams=2))``."""
    s = Settings(**{**(settings or Settings()).__dict__, **overrides})
    if s.teams < 1 or s.groups < 1:
        raise ValueError("need at least one team and one group")
    ledger = Ledger()
    builders = [_TeamBuilder(ledger, s, i) for i in range(s.teams)]
    for b in builders:
        b.build()
    questions = [q for b in builders for q in b.questions()]
    # every file in time order across teams (teams interleave, each team's groups stay in order)
    data = ledger.dataset(questions, info={"source": "generator", **s.__dict__})
    for rows in (data.groups, data.gold, data.memories):  # stable: order within a group is kept
        rows.sort(key=lambda row: (row["time"], row["team"]))
    return data


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memgraft.collab.data.generator", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--teams", type=int, default=3)
    p.add_argument("--groups", type=int, default=12, help="time-aligned groups per team")
    p.add_argument("--questions-per-type", type=int, default=2, help="per team and question type")
    p.add_argument("--out", required=True, type=Path, help="folder for stream/questions/gold/memories .jsonl")
    a = p.parse_args(argv)
    data = generate(seed=a.seed, teams=a.teams, groups=a.groups, questions_per_type=a.questions_per_type)
    paths = data.write(a.out)
    print(json.dumps({"counts": data.counts(), "files": {k: str(v) for k, v in paths.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
