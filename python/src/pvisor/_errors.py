"""PvisorError: the one exception type of the package."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._result import Result

# Exit codes of the binary and the failure category each stands for (the
# result's failure.category, when there is a result, is used instead).
EXIT_CATEGORIES = {
    2: "configuration_error",
    10: "trajectory_error",
    11: "unsupported_agent",
    20: "workspace_error",
    30: "executor_error",
    31: "ambiguous_execution",
    40: "continuation_error",
    50: "internal_error",
    130: "interrupted",
}


def category_for_exit(code: int) -> str:
    """The failure category an exit code of pvisor stands for."""
    return EXIT_CATEGORIES.get(code, "internal_error")


class PvisorError(Exception):
    """A pvisor command failed.

    Attributes:
        category: the failure category, as in the result's ``failure.category``
            (``configuration_error``, ``trajectory_error``, ``unsupported_agent``,
            ``unsupported_version``, ``workspace_error``, ``executor_error``,
            ``ambiguous_execution``, ``continuation_error``, ``model_*``,
            ``internal_error``, ``interrupted``).
        exit_code: the binary's exit status (2, 10, 11, 20, 30, 31, 40, 50 or 130).
        message: what went wrong.
        result: the ``sandbox-playback.result/v3`` result the command printed,
            when it printed one (every replay, resume and fork does).
        stderr: what the binary wrote on stderr.
    """

    def __init__(self, message: str, *, category: str, exit_code: int,
                 result: Optional["Result"] = None, stderr: str = "") -> None:
        super().__init__(f"{category} (exit {exit_code}): {message}")
        self.message = message
        self.category = category
        self.exit_code = exit_code
        self.result = result
        self.stderr = stderr
