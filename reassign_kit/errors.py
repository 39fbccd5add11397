"""Every exception reassign_kit raises on purpose, and the exit code each one means.

Each error names what is at fault (the partition, broker, option or file), so the CLI prints
it and exits with its code instead of a traceback. Each exit code means one thing::

    ReassignKitError (1: unexpected)
    ├── UsageError (2)                   bad options or option combinations
    │   ├── SparkSessionError (2)        a Spark session on another master already runs
    │   ├── SparkStartError (2)          Spark cannot start (no Java, JAVA_HOME wrong, ...)
    │   └── MissingExtraError (2)        the feature's pip extra ([spark], [notebook]) is missing
    ├── InvalidPlanError (3)             an input file failed validation; ``problems`` lists all
    │   └── CapacityError (3)            no plan within the capacity file's hard limits
    ├── KafkaOperationError (4)          the cluster refused or failed an operation
    │   └── AuthorizationError (4)       the client's principal lacks a right the action needs
    ├── SandboxError (5)                 the local sandbox cannot do what was asked
    ├── ReassignmentInProgressError (6)  others' moves in flight and no --additional
    ├── RunError (7)                     a paced run ended early (deadline, rejected/lost move)
    ├── ThrottleCleanupError (8)         the final throttle cleanup failed: throttles may be left
    ├── RunbookError (9)                 a runbook notebook failed, timed out or grew too big
    ├── JournalError (12)                the journal cannot be written (disk full) or is corrupt
    ├── PlanHashError (13)               the plan is not the approved one (--expect-plan-hash)
    ├── PlanDriftError (14)              the cluster changed since the plan was made
    └── IllegalTransition (1)            a move status change the table forbids: a bug

Codes that are outcomes, not errors: 0 done, 10 / 11 --verify in progress / mismatch,
15 plan written but a stated goal not met, 130 interrupted. ``EXIT_CODES`` is the table ``--help`` prints.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_IN_PROGRESS = 10
EXIT_MISMATCH = 11
EXIT_GOAL_NOT_MET = 15
EXIT_INTERRUPTED = 130


class ReassignKitError(Exception):
    """Base of every error reassign_kit raises on purpose."""

    exit_code = 1


class UsageError(ReassignKitError):
    """Bad command-line arguments or option combinations."""

    exit_code = 2


class SparkSessionError(UsageError):
    """This process already runs a Spark session on another master than the one asked for
    (Spark would silently hand back the running one); the message names both."""


class SparkStartError(UsageError):
    """Spark could not start (Java missing, JAVA_HOME pointing nowhere, a master that does not
    answer); the message names the master, JAVA_HOME and the engine that needs no Spark."""


class LoadSourceError(UsageError):
    """A load history (``--load-from``) that cannot be read: a metrics server that cannot be
    reached or answers an error, an export that is not the expected table; the message names
    it (a URL without its credentials)."""


class MissingExtraError(UsageError):
    """A feature whose optional dependencies (a pip extra) are not installed: the message
    names the feature and the extra to install, e.g. ``reassign-kit[spark]``."""


# which extra brings which top-level module (pyproject.toml's optional-dependencies)
EXTRA_OF_MODULE = {
    "pyspark": "spark",
    "pyarrow": "spark",
    "py4j": "spark",
    "papermill": "notebook",
    "nbformat": "notebook",
    "nbclient": "notebook",
    "ipykernel": "notebook",
    "ipywidgets": "notebook",
    "anywidget": "notebook",
    "plotly": "notebook",
    "jupyterlab": "notebook",
}


def missing_extra(err: ImportError, feature: str = "", hint: str = "") -> MissingExtraError | None:
    """The ``MissingExtraError`` for an import of an optional dependency that failed (None
    when the module is not one an extra brings: then it is a bug, not an install choice)."""
    name = (getattr(err, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(name)
    if extra is None:
        return None
    what = feature or f"this feature (it imports {name})"
    return MissingExtraError(
        f"{what} needs the [{extra}] extra, which is not installed: "
        f"pip install 'reassign-kit[{extra}]' (or [all])" + (f"; {hint}" if hint else "")
    )


def require_extra(module: str, feature: str, hint: str = "") -> None:
    """Import ``module`` or raise ``MissingExtraError`` naming ``feature`` and its extra."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as e:
        found = missing_extra(e, feature, hint)
        if found is None:
            raise
        raise found from None


MAX_PROBLEMS_SHOWN = 100  # an InvalidPlanError's message lists at most this many


def printable(text: str) -> str:
    """``text`` safe to print on any terminal: control characters (an escape sequence in a
    topic name would drive the operator's terminal) and lone surrogates (no encoding takes
    them) shown escaped, as Python writes them."""
    return "".join(
        c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else ascii(c)[1:-1] for c in text
    )


class InvalidPlanError(ReassignKitError):
    """A plan (or other input file) failed validation; ``problems`` lists every one of them."""

    exit_code = 3

    def __init__(self, problems: list, header: str = "the plan is invalid"):
        self.problems = list(problems)
        lines = [
            f"{printable(header)} ({len(self.problems)} problem(s)); nothing was sent to the "
            "cluster:"
        ]
        # a file of a million bad entries is a screenful, not a million lines (all of them
        # stay in ``problems``)
        lines += [f"  - {printable(str(p))}" for p in self.problems[:MAX_PROBLEMS_SHOWN]]
        if len(self.problems) > MAX_PROBLEMS_SHOWN:
            lines.append(f"  … and {len(self.problems) - MAX_PROBLEMS_SHOWN} more")
        super().__init__("\n".join(lines))


class CapacityError(InvalidPlanError):
    """No plan keeps every broker within the capacity file's hard limits (disk bytes, max
    replicas): ``problems`` names each broker at fault and by how much it would be over."""


class KafkaOperationError(ReassignKitError):
    """The cluster refused or failed an operation."""

    exit_code = 4


class AuthorizationError(KafkaOperationError):
    """The client's principal may not do what the action needs (a missing ACL), found before
    anything was sent; the message names each missing operation and its resource."""


class SandboxError(ReassignKitError):
    """The local sandbox cluster cannot do what was asked (missing Java, unknown dir, ...)."""

    exit_code = 5


class ReassignmentInProgressError(ReassignKitError):
    """--execute while other reassignments are in flight, without --additional."""

    exit_code = 6


class RunError(ReassignKitError):
    """The run stopped on an error (a rejected submission, a lost move, a deadline)."""

    exit_code = 7


class ThrottleCleanupError(ReassignKitError):
    """A run's final throttle cleanup failed: throttle configs may be left on the cluster."""

    exit_code = 8


class RunbookError(ReassignKitError):
    """A notebook cell failed, timed out, or the output notebook is unreasonably large.
    (Exit 9; it shared 6 with ReassignmentInProgressError before.)"""

    exit_code = 9


class JournalError(ReassignKitError):
    """The run journal is unusable: a write failed (disk full, I/O error) or a line before
    the last one is not a JSON event. The message names the file (and the line)."""

    exit_code = 12


class PlanHashError(ReassignKitError):
    """``--expect-plan-hash``: the plan file's content hash is another one."""

    exit_code = 13


class PlanDriftError(ReassignKitError):
    """The cluster changed since the plan was made (partitions moved, brokers gone, topics
    deleted) and ``--allow-drift`` was not given; the message names each drift."""

    exit_code = 14


class IllegalTransition(ReassignKitError):
    """A move status change the transition table does not allow: a bug in the engine."""

    exit_code = 1


EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done: the action succeeded; for --verify every move (and log-dir move) is complete",
    ReassignKitError.exit_code: "unexpected error",
    UsageError.exit_code: "usage error: bad options or option combinations",
    InvalidPlanError.exit_code: "invalid plan: the reassignment JSON failed validation (every "
    "problem is listed; nothing was sent to the cluster)",
    KafkaOperationError.exit_code: "the cluster refused or failed an operation (for --execute / "
    "--cancel: some partitions failed; the others in the same request stand, as reported)",
    SandboxError.exit_code: "sandbox: the local cluster cannot do what was asked",
    ReassignmentInProgressError.exit_code: "--execute refused: other reassignments are in "
    "progress and --additional is not set",
    RunError.exit_code: "paced --execute ended early: a deadline expired, a move was rejected "
    "or lost",
    ThrottleCleanupError.exit_code: "paced --execute could not clear its throttles at the end: "
    "they may be left (the message names them and the command that removes them); "
    "`throttles --check`: throttle configs no reassignment in flight needs are set",
    RunbookError.exit_code: "runbook: a notebook cell failed or timed out",
    JournalError.exit_code: "the journal cannot be written (disk full, I/O error; a paced run "
    "stops submitting and cleans up), is corrupt before its last line or cut inside its first "
    "(the line is named), or is behind or contradicted by the cluster (the partition is named)",
    PlanHashError.exit_code: "--execute refused: the plan's sha256 is not --expect-plan-hash "
    "(not the approved plan; nothing sent)",
    PlanDriftError.exit_code: "--execute refused: the cluster changed since the plan was made "
    "(each drifted partition, gone broker or deleted topic is named; nothing sent); "
    "--allow-drift runs it anyway",
    EXIT_IN_PROGRESS: "--verify: some moves are still in progress",
    EXIT_MISMATCH: "--verify: some partitions are neither complete nor moving toward the plan "
    "(other replicas, another reassignment, or a missing partition)",
    EXIT_GOAL_NOT_MET: "plan: the plan (and report) were written, but a goal it states is not "
    "met (--balance bytes: a broker outside its band; the report's bytes_goal names them)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C / SIGTERM); a paced run prints how to resume or cancel",
}


def format_exit_codes() -> str:
    """The exit-code table as ``--help`` prints it."""
    import textwrap

    lines = ["exit codes:"]
    for code, meaning in EXIT_CODES.items():
        wrapped = textwrap.wrap(meaning, 80)
        lines.append(f"  {code:<4}{wrapped[0]}")
        lines += [f"      {w}" for w in wrapped[1:]]
    return "\n".join(lines) + "\n"
