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
