"""What the bank refuses, as exceptions: callers (the updater, the service) tell them apart by type."""

from __future__ import annotations


class BankError(RuntimeError):
    """Anything the bank refuses to do, with the reason in words."""


class GroupAlreadyApplied(BankError):
    pass


class OutOfOrderGroup(BankError):
    pass


class EmbedderMismatch(BankError):
    pass


class StaleDecision(BankError):
    """A decision's ``before``/``valid_before`` is not the target's state inside the transaction."""


class BankUnavailable(BankError):
    """The bank's database cannot be reached now (restarting, down, every pooled connection busy): retry later."""


class BankTimeout(BankError):
    """A statement or lock wait ran past its setting (``bank.statement_timeout_s``, ``bank.lock_timeout_s``,
    ``bank.idle_in_transaction_s``); nothing of that transaction was written: retry later."""


class SchemaTooNew(BankError):
    """A bank written by newer code (a schema version this code does not know)."""


# The refusals of a group's write, worded once for both ways of writing it (``transaction``, ``pg_apply``).
def already_applied(team: str, group_id: str) -> GroupAlreadyApplied:
    return GroupAlreadyApplied(f"team {team!r}: group {group_id!r} is already applied")


def out_of_order(team: str, group_id: str, when: str, last: str) -> OutOfOrderGroup:
    return OutOfOrderGroup(f"team {team!r}: group {group_id!r} at {when} comes before the last applied group "
                           f"({last}); a team's groups apply in time order")


def clash(team: str, ids: list[str]) -> BankError:
    return BankError(f"team {team!r} already holds memories {sorted(ids)}")


def stale(decision_id: str, memory_id: str) -> StaleDecision:
    return StaleDecision(f"decision {decision_id!r} was made against a different state of {memory_id!r} than the "
                         f"bank holds in this transaction")


def missing_target(decision_id: str, team: str, memory_id: str) -> BankError:
    return BankError(f"decision {decision_id!r}: team {team!r} has no memory {memory_id!r}")
