"""The rules a set of execute options must keep (KIP-1335's and ours), each refusal naming the
option at fault, before anything is read or sent: ``ValidatedOptions``, a part of
``ExecuteOptions`` (run/options.py), whose fields it reads; and ``DerivedOptions``, what
is derived from them (the scheduler's caps, the journal's JSON form)."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any, Self

from ..errors import UsageError
from ..health.sources import parse_spec
from ..moves.schedule import ORDERS, Caps
from ..pacing.controller import Objective
from .option_spec import INT32_MAX, INT64_MAX, ON_DEADLINE, PACES


class DerivedOptions:
    """What is derived from a set of execute options: the scheduler's caps, and the JSON form
    the journal keeps (``run_started``, read back by ``--resume``). A part of the dataclass
    ``ExecuteOptions``, whose fields it reads."""

    def caps(self) -> Caps:
        return Caps(
            self.batch_size,
            self.incremental,
            self.max_moves_per_broker,
            self.max_leader_moves,
            self.cluster_max_reassignments,
            prefer_leader_moves=self.parallel_replica_count is not None,
        )

    def to_json_obj(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> Self:
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in obj.items() if k in names})


class ValidatedOptions:
    """``ExecuteOptions.validate`` and its parts (see the module docstring)."""

    def validate(self) -> Self:
        """Raise UsageError naming the option at fault (KIP-1335's rules and ours)."""
        self.caps().validate()
        if self.require_broker_rf_guard:  # the broker-side guard is the RF guard, enforced
            self.allow_replication_factor_change = False
        if not isinstance(self.poll_interval_ms, int) or self.poll_interval_ms <= 0:
            raise UsageError(
                f"--reassignment-poll-interval-ms must be > 0, got {self.poll_interval_ms}"
            )
        if self.order not in ORDERS:
            raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if self.on_deadline not in ON_DEADLINE:
            raise UsageError(
                f"--on-deadline must be one of {', '.join(ON_DEADLINE)}, got {self.on_deadline!r}"
            )
        for name, v in (
            ("--rollback-timeout", self.rollback_timeout),
            ("--move-deadline", self.move_deadline),
            ("--run-deadline", self.run_deadline),
            ("--stuck-after", self.stuck_after),
        ):
            if v is not None and not v > 0:
                raise UsageError(f"{name} must be > 0 seconds, got {v}")
        if self.throttle is not None and self.throttle <= 0:
            raise UsageError(
                f"--throttle must be a positive number of bytes/s, got {self.throttle}"
            )
        self._validate_pace()
        if self.log_dir_throttle is not None and self.log_dir_throttle <= 0:
            raise UsageError(
                "--replica-alter-log-dirs-throttle must be a positive number of bytes/s, "
                f"got {self.log_dir_throttle}"
            )
        c = self.disk_ceiling
        if c is not None and (
            isinstance(c, bool) or not isinstance(c, int | float) or not 0 < c <= 1
        ):
            raise UsageError(f"--disk-ceiling must be a share above 0 and at most 1, got {c!r}")
        self._validate_bounds()
        if not self.timeout_s >= 0:
            raise UsageError(f"--timeout must be >= 0, got {self.timeout_s}")
        self._validate_metrics()
        if self.parallel_replica_count is not None and self.parallel_replica_count < 1:
            raise UsageError(
                f"--parallel-replica-count must be >= 1, got {self.parallel_replica_count}"
            )
        if (
            isinstance(self.max_elections_per_poll, bool)
            or not isinstance(self.max_elections_per_poll, int)
            or self.max_elections_per_poll < 1
        ):
            raise UsageError(
                f"--max-elections-per-poll must be a positive integer, got "
                f"{self.max_elections_per_poll!r}"
            )
        return self

    def _validate_bounds(self) -> None:
        """Each number within the Kafka type it is sent as (rates: LONG) or our own 32-bit
        int, and durations finite, so the API refuses what the flags' converters refuse."""
        for name, v, top in (
            ("--throttle", self.throttle, INT64_MAX),
            ("--replica-alter-log-dirs-throttle", self.log_dir_throttle, INT64_MAX),
            ("--throttle-floor", self.throttle_floor, INT64_MAX),
            ("--reassignment-batch-size", self.batch_size, INT32_MAX),
            ("--reassignment-poll-interval-ms", self.poll_interval_ms, INT32_MAX),
            ("--max-moves-per-broker", self.max_moves_per_broker, INT32_MAX),
            ("--max-leader-moves", self.max_leader_moves, INT32_MAX),
            ("--cluster-max-reassignments", self.cluster_max_reassignments, INT32_MAX),
            ("--parallel-replica-count", self.parallel_replica_count, INT32_MAX),
            ("--max-elections-per-poll", self.max_elections_per_poll, INT32_MAX),
        ):
            if isinstance(v, int) and not isinstance(v, bool) and v > top:
                raise UsageError(f"{name} must be <= {top}, got {v}")
        for name, d in (
            ("--rollback-timeout", self.rollback_timeout),
            ("--move-deadline", self.move_deadline),
            ("--run-deadline", self.run_deadline),
            ("--stuck-after", self.stuck_after),
            ("--timeout", self.timeout_s),
        ):
            if isinstance(d, int | float) and not math.isfinite(d):
                raise UsageError(f"{name} must be finite, got {d}")

    def _validate_metrics(self) -> None:
        """--health-source, --metrics-port, --metrics-textfile, each refused by name."""
        if self.health_source is not None:
            parse_spec(self.health_source)
        p = self.metrics_port
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not 0 < p < 65536):
            raise UsageError(f"--metrics-port must be a TCP port (1-65535), got {p!r}")
        t = self.metrics_textfile
        if t is not None:
            if not isinstance(t, str) or not t.strip() or t.endswith(os.sep):
                raise UsageError(f"--metrics-textfile must be a file path, got {t!r}")
            parent = os.path.dirname(os.path.abspath(t))
            if not os.path.isdir(parent):
                raise UsageError(f"--metrics-textfile {t}: its directory {parent} does not exist")
            if os.path.isdir(t):
                raise UsageError(f"--metrics-textfile {t} is a directory, not a file")
            check_textfile_writable(t, parent)

    def _validate_pace(self) -> None:
        """--pace and its companions, each refused by name (nothing read or sent yet)."""
        if self.pace not in PACES:
            raise UsageError(f"--pace must be one of {', '.join(PACES)}, got {self.pace!r}")
        if self.pace != "adaptive":
            for name, v in (
                ("--slo-produce-p99", self.slo_produce_p99),
                ("--throttle-floor", self.throttle_floor),
            ):
                if v is not None:
                    raise UsageError(f"{name} is only meaningful with --pace adaptive")
            return
        if self.throttle is None:
            raise UsageError(
                "--pace adaptive needs --throttle: the ceiling no broker's rate goes above"
            )
        if self.slo_produce_p99 is None:
            raise UsageError(
                "--pace adaptive needs --slo-produce-p99 (e.g. 50ms, or +20ms over the baseline)"
            )
        Objective.parse(self.slo_produce_p99)
        f = self.throttle_floor
        if f is not None and (isinstance(f, bool) or not isinstance(f, int) or f <= 0):
            raise UsageError(f"--throttle-floor must be a positive number of bytes/s, got {f!r}")
        if f is not None and f > self.throttle:
            raise UsageError(f"--throttle-floor ({f}) must be <= --throttle ({self.throttle})")
        if not 0 < self.pace_settle_s < 30:
            raise UsageError(f"pace_settle_s must be in (0, 30) s, got {self.pace_settle_s}")


def check_textfile_writable(path: str, parent: str) -> None:
    """The textfile is written as a temp file beside it, then renamed over it: both must be
    possible (a read-only directory, /proc, or a device such as /dev/null renamed over are
    refused by name now, not as an OSError at the first sample)."""
    if os.path.lexists(path) and not os.path.isfile(path):
        raise UsageError(f"--metrics-textfile {path} exists and is not a regular file")
    try:
        fd, probe = tempfile.mkstemp(prefix=".rk-probe-", dir=parent)
    except OSError as e:
        raise UsageError(
            f"--metrics-textfile {path}: cannot write in {parent}: {e.strerror}"
        ) from None
    os.close(fd)
    os.unlink(probe)
