"""The synthetic generator's world: its team domains, their topics and values, the agents and the memory templates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Topic:
    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Domain:
    key: str
    work: str  # what one unit of the team's work is called ("experiment", "build", ...)
    topics: tuple[Topic, ...]
    distractors: tuple[str, ...]  # neutral templates with one {n}


def _topics(*pairs: tuple[str, Sequence[str]]) -> tuple[Topic, ...]:
    return tuple(Topic(name, tuple(values)) for name, values in pairs)


DOMAINS: tuple[Domain, ...] = (
    Domain(
        "lab",
        "experiment",
        _topics(
            ("incubation temperature", ["37 °C", "30 °C", "42 °C"]),
            ("primary assay", ["ELISA", "Western blot", "qPCR"]),
            ("cell line", ["HEK293", "HeLa", "CHO-K1"]),
            ("antibody supplier", ["Abcam", "Bio-Rad", "Thermo Fisher"]),
            ("centrifuge speed", ["4,000 rpm", "6,000 rpm", "3,000 rpm"]),
            ("raw-data location", ["the lab NAS", "the university cloud drive", "the project S3 bucket"]),
        ),
        (
            "Observation: freezer {n} was defrosted and restocked.",
            "Log: ordered {n} boxes of pipette tips.",
            "Observation: seminar room {n} is booked for the journal club.",
            "Log: calibrated balance {n} this morning.",
        ),
    ),
    Domain(
        "release",
        "build",
        _topics(
            ("release branch", ["release/2.3", "release/2.4", "release/3.0"]),
            ("CI Python version", ["Python 3.11", "Python 3.12", "Python 3.13"]),
            ("database migration tool", ["Alembic", "Flyway", "Liquibase"]),
            ("deployment region", ["eu-west-1", "us-east-1", "ap-southeast-2"]),
            ("checkout flag setting", ["flag off", "a 10% rollout", "a full rollout"]),
            ("code-freeze day", ["Thursday", "Friday", "Wednesday"]),
        ),
        (
            "Log: closed {n} stale tickets in the tracker.",
            "Observation: the staging dashboard loaded in {n} seconds.",
            "Log: made {n} edits to the onboarding wiki page.",
            "Observation: {n} new contributors joined the chat.",
        ),
    ),
    Domain(
        "ward",
        "shift",
        _topics(
            ("default IV antibiotic", ["cefazolin", "ceftriaxone", "vancomycin"]),
            ("fall-risk check interval", ["every 2 hours", "every 4 hours", "every hour"]),
            ("isolation precaution for bed 12", ["contact precautions", "droplet precautions", "standard precautions"]),
            ("insulin sliding scale", ["scale A", "scale B", "scale C"]),
            ("handover time", ["07:00", "07:30", "08:00"]),
            ("pressure-wound dressing", ["hydrocolloid dressing", "foam dressing", "alginate dressing"]),
        ),
        (
            "Log: restocked {n} boxes of gloves in the supply room.",
            "Observation: the kettle in staff room {n} is broken.",
            "Log: completed {n} fire-safety training modules.",
            "Observation: {n} visitors signed in at the front desk this morning.",
        ),
    ),
    Domain(
        "logistics",
        "dispatch",
        _topics(
            ("carrier for the northern route", ["NorthFreight", "Bluewave Haulage", "RailCo"]),
            ("dispatch cut-off time", ["16:00", "17:30", "15:00"]),
            ("cold-chain temperature range", ["2–8 °C", "0–4 °C", "-18 °C or below"]),
            ("returns warehouse", ["Depot 3", "Depot 7", "Depot 11"]),
            ("pallet label standard", ["GS1-128", "SSCC-only labels", "the legacy in-house label"]),
            ("fuel surcharge", ["4%", "6%", "8%"]),
        ),
        (
            "Log: washed {n} delivery vans at the yard.",
            "Observation: the light over loading bay {n} flickers.",
            "Log: filed {n} customs forms for the southern route.",
            "Observation: {n} pallets of packing foam arrived.",
        ),
    ),
)

AGENTS = (
    "Ana", "Ben", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas",
    "Kemal", "Lena", "Mateo", "Nia", "Oskar", "Priya", "Quinn", "Rosa", "Sami", "Tomas",
)  # fmt: skip

TEAM_FIRST = {
    "decision": "Team decision: the {name} is {value} from now on.",
    "protocol": "Protocol: every member uses {value} as the {name}.",
    "instruction": "Instruction from the lead: set the {name} to {value} until further notice.",
}
TEAM_CHANGE = {
    "decision": "Team decision: from today the {name} is {value} instead of {old}.",
    "protocol": "Protocol change: the {name} is now {value}.",
    "instruction": "Instruction from the lead: switch the {name} to {value} immediately.",
}
INDIVIDUAL = {
    "log": "Log: today's {work} used {value} as the {name}.",
    "observation": "Observation: with {value} as the {name}, the {work} went as expected.",
    "attempt": "Attempt: I have set up the next {work} with {value} as the {name}.",
}
