"""Exception hierarchy: every error a user can meet is a ReassignKitError with a message that
names what is at fault, so the CLI can print it and exit non-zero instead of a traceback."""

from __future__ import annotations


class ReassignKitError(Exception):
    """Base of every error reassign_kit raises on purpose."""

    exit_code = 1


class UsageError(ReassignKitError):
    """Bad command-line arguments or option combinations."""

    exit_code = 2


class InvalidPlanError(ReassignKitError):
    """A plan (or other input file) failed validation; ``problems`` lists every one of them."""

    exit_code = 3

    def __init__(self, problems: list, header: str = "the plan is invalid"):
        self.problems = list(problems)
        lines = [f"{header} ({len(self.problems)} problem(s)); nothing was sent to the cluster:"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class KafkaOperationError(ReassignKitError):
    """The cluster refused or failed an operation."""

    exit_code = 4


class SandboxError(ReassignKitError):
    """The local sandbox cluster cannot do what was asked (missing Java, unknown dir, ...)."""

    exit_code = 5


class ReassignmentInProgressError(ReassignKitError):
    """--execute while other reassignments are in flight, without --additional."""

    exit_code = 6


class ThrottleCleanupError(ReassignKitError):
    """A run's final throttle cleanup failed: throttle configs may be left on the cluster."""

    exit_code = 8
