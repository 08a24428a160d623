"""``python -m memgraft.collab``: add groups to a bank, search it, answer from it, audit it.

    python -m memgraft.collab add-group --bank bank.sqlite --group group.json [--policy rules]
    python -m memgraft.collab search --bank bank.sqlite --team lab-0 --query "which assay?" [--as-of 2025-01-08T10:00:00]
    python -m memgraft.collab answer --bank bank.sqlite --team lab-0 --question "which assay do we use?"
    python -m memgraft.collab memories --bank bank.sqlite --team lab-0 [--as-of TIME]
    python -m memgraft.collab history --bank bank.sqlite --team lab-0 --memory lab-0-g000-m01

Every memory is shown with its type, time, original and maintained text, and whether it
is valid; ``search`` and ``answer`` also name the S_sem model (the cosine fallback says so).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import typer
from rich.console import Console
from rich.table import Table

from memgraft.collab.bank import BankError
from memgraft.collab.types import Memory

app = typer.Typer(add_completion=False, help="HiCoMER: a validity-aware collaborative memory bank.")
BANK = typer.Option(..., "--bank", help="the bank: a SQLite file, or a postgresql:// URL (PostgreSQL with pgvector)")
PROFILE = typer.Option("local", "--profile", help="settings profile")
SET = typer.Option([], "--set", help="settings: section.field=value (repeatable)")
SCORER = typer.Option(None, "--scorer", help="a trained validity scorer; without it S_val is left out")
AS_OF = typer.Option(None, "--as-of", help="ISO time: the bank as it stood then (default: now)")


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, 200))


def _open(bank: str, profile: str, overrides: list[str], scorer: Optional[str] = None, policy: Optional[str] = None):
    from memgraft.collab.api import CollabMemory
    from memgraft.config import load_settings

    return CollabMemory.open(bank, load_settings(profile, overrides), scorer_path=scorer, policy=policy)


def memory_table(title: str, memories: Sequence[Memory], scores: Sequence[dict[str, Any]] | None = None) -> Table:
    t = Table(title=title, show_lines=True)
    for col in ("memory", "type", "time", "valid", "original", "maintained"):
        t.add_column(col, overflow="fold")
    if scores:
        for col in scores[0]:
            t.add_column(col, justify="right")
    for i, m in enumerate(memories):
        maintained = "(unchanged)" if m.maintained == m.original else m.maintained
        cells = [m.memory_id, m.type, m.time.strftime("%Y-%m-%d %H:%M"), "yes" if m.valid else "NO",
                 m.original, maintained]
        if scores:
            cells += [("-" if v is None else f"{v:.3f}") for v in scores[i].values()]
        t.add_row(*cells)
    return t


def _fail(err: Exception) -> None:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(2)


@app.command("add-group")
def add_group(bank: str = BANK, group: str = typer.Option(..., help="a JSON file holding one group ('-': stdin)"),
              policy: Optional[str] = typer.Option(None, help="updater policy: judge, rules or llm (default: settings)"),
              profile: str = PROFILE, set_: list[str] = SET) -> None:
    """Run one group (a stream line) through the updater and commit it with its decisions."""
    text = sys.stdin.read() if group == "-" else Path(group).read_text(encoding="utf-8")
    memory = _open(bank, profile, set_, policy=policy)
    try:
        report = memory.add_group(json.loads(text))
    except (BankError, ValueError) as err:
        _fail(err)
    finally:
        memory.close()
    if report.skipped:  # adding a group is idempotent: a rerun after a crash must not fail
        typer.echo(f"group {report.group_id} of team {report.team} is already applied: nothing changed")
        return
    t = Table(title=f"group {report.group_id} of team {report.team}: {len(report.decisions)} decisions")
    for col in ("memory", "level", "relation", "action", "valid after", "maintained after", "decided by"):
        t.add_column(col, overflow="fold")
    for d in report.decisions:
        t.add_row(d.memory_id, d.level, str(d.relation), str(d.action), "yes" if d.valid_after else "NO",
                  d.after if d.after != d.before else "(unchanged)", d.decided_by)
    _console().print(t)


@app.command()
def search(bank: str = BANK, team: str = typer.Option(...), query: str = typer.Option(...), as_of: Optional[str] = AS_OF,
           k: int = typer.Option(10, help="memories to show"), scorer: Optional[str] = SCORER,
           profile: str = PROFILE, set_: list[str] = SET) -> None:
    """A team's memories ranked by S_sem + lambda * log sigmoid(S_val), as of now or of a time."""
    memory = _open(bank, profile, set_, scorer)
    try:
        hits = memory.search(team, query, k=k, as_of=as_of)
        reranker = memory._reranker().name
    except (BankError, ValueError) as err:
        _fail(err)
    finally:
        memory.close()
    scores = [{"dense": h.dense, "S_sem": h.semantic, "S_val": h.validity, "S_final": h.score} for h in hits]
    con = _console()
    con.print(memory_table(f"{team}: {query!r}" + (f" as of {as_of}" if as_of else ""), [h.memory for h in hits],
                           scores))
    con.print(f"S_sem: {reranker}; S_val: {'trained scorer ' + scorer if scorer else 'none (no --scorer)'}",
              soft_wrap=True)


@app.command()
def answer(bank: str = BANK, team: str = typer.Option(...), question: str = typer.Option(...),
           as_of: Optional[str] = AS_OF, scorer: Optional[str] = SCORER,
           evidence: int = typer.Option(5, help="memories the answer may use"),
           profile: str = PROFILE, set_: list[str] = SET) -> None:
    """Answer from the team's memories: retrieve, drop the losing side of each conflict, answer from the rest."""
    memory = _open(bank, profile, set_, scorer)
    try:
        result = memory.answer(team, question, as_of=as_of, evidence=evidence)
    except (BankError, ValueError) as err:
        _fail(err)
    finally:
        memory.close()
    con = _console()
    con.print(memory_table("evidence the answer used", result.evidence))
    for dropped, winner, why in result.dropped:
        con.print(f"dropped {dropped.memory_id} (beaten by {winner.memory_id}: {why})", soft_wrap=True)
    con.print(f"S_sem: {result.reranker}", soft_wrap=True)
    con.print(f"[bold]answer:[/bold] {result.answer}", soft_wrap=True)


@app.command()
def memories(bank: str = BANK, team: str = typer.Option(...), as_of: Optional[str] = AS_OF,
             profile: str = PROFILE, set_: list[str] = SET) -> None:
    """Every memory of a team, as it stands now or stood at a time."""
    from memgraft.collab.bank import open_bank

    try:
        with open_bank(bank) as b:
            from memgraft.collab.api import parse_time
            rows = b.memories(team, as_of=parse_time(as_of))
            stats = b.stats(team)
    except (BankError, ValueError) as err:
        _fail(err)
    con = _console()
    con.print(memory_table(f"team {team}" + (f" as of {as_of}" if as_of else ""), rows))
    con.print(json.dumps(stats), soft_wrap=True)


@app.command()
def history(bank: str = BANK, team: str = typer.Option(...), memory: str = typer.Option(..., help="a memory id")) -> None:
    """The append-only log of one memory's maintenance decisions."""
    from memgraft.collab.bank import open_bank

    with open_bank(bank) as b:
        decisions = b.decisions(team, memory)
        current = b.memory(team, memory)
    if current is None:
        _fail(ValueError(f"team {team!r} has no memory {memory!r}"))
    con = _console()
    con.print(memory_table("now", [current]))
    t = Table(title=f"decisions on {memory}", show_lines=True)
    for col in ("at", "group", "level", "relation", "action", "valid", "before", "after", "by"):
        t.add_column(col, overflow="fold")
    for d in decisions:
        t.add_row(d.decided_at.strftime("%Y-%m-%d %H:%M"), d.group_id, d.level, str(d.relation), str(d.action),
                  f"{'yes' if d.valid_before else 'NO'} -> {'yes' if d.valid_after else 'NO'}", d.before, d.after,
                  d.decided_by)
    con.print(t)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
