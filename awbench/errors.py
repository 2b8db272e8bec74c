"""The one error a user is shown: what awbench refuses or cannot do, with the exit code it ends a command with.

Each module raises its own subclass (StoreError, DataError, MissingAPIKey, BudgetExhausted...), which says its
exit code and, where there is one, what the user can do next (`hint`); the command line prints any of them in
one place (`awbench.cli.errors`) as `error: <message>` and exits with the code. `key` names the refusal in a
word that stays when its wording changes: what tests and scripts check.

Imports nothing: the rule judge's worker processes load the modules that raise these.
"""

from __future__ import annotations

EXIT_FAILURES, EXIT_USAGE = 1, 2


class AwbenchError(Exception):
    """A refusal the user can act on; the message is meant for them as it is (it names the file, option or
    run). A subclass sets `key`, `exit_code` and `hint` for all its refusals; one refusal may name its own `key`."""

    key = "refused"
    exit_code = EXIT_USAGE
    hint = ""  # said after the message: what to do next

    def __init__(self, message: str, *, key: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        if key is not None:
            self.key = key
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        """What the user reads: the message, then the hint."""
        return f"{self}{self.hint}"


class SettingsError(AwbenchError, ValueError):
    """Settings that cannot go together (a ValueError to pydantic and to the Python API); the message names
    them as the caller does."""

    key = "bad_option"
