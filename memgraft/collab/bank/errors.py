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
