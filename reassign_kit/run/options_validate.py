"""The rules a set of execute options must keep (KIP-1335's and ours), each refusal naming the
option at fault, before anything is read or sent: ``ValidatedOptions``, a part of
``ExecuteOptions`` (engine/options.py), whose fields it reads."""

from __future__ import annotations

from typing import Self

from ..errors import UsageError
from ..health.sources import parse_spec
from ..moves.schedule import ORDERS
from ..pacing.controller import Objective
from .option_spec import ON_DEADLINE, PACES


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

    def _validate_metrics(self) -> None:
        """--health-source, --metrics-port, --metrics-textfile, each refused by name."""
        if self.health_source is not None:
            parse_spec(self.health_source)
        p = self.metrics_port
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not 0 < p < 65536):
            raise UsageError(f"--metrics-port must be a TCP port (1-65535), got {p!r}")
        t = self.metrics_textfile
        if t is not None:
            import os

            if not isinstance(t, str) or not t.strip() or t.endswith(os.sep):
                raise UsageError(f"--metrics-textfile must be a file path, got {t!r}")
            parent = os.path.dirname(os.path.abspath(t))
            if not os.path.isdir(parent):
                raise UsageError(f"--metrics-textfile {t}: its directory {parent} does not exist")
            if os.path.isdir(t):
                raise UsageError(f"--metrics-textfile {t} is a directory, not a file")

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
