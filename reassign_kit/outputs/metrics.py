"""The run's own metrics out: ``--metrics-port`` serves them for Prometheus
(prometheus-client's HTTP server on 127.0.0.1) and ``--metrics-textfile`` writes them for
node-exporter's textfile collector (temp file + rename: a reader never sees half a file).

``RunMetrics`` hears every event of the run (``Run.subscribe``) and keeps the latest figures;
the moves by state come from ``Run.status()`` at scrape time when a status function is given
(exact, resume included), else from the events. Metric names are in ``METRICS`` (the Grafana
dashboard in contrib/grafana uses only those; a test checks it).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..errors import UsageError

P = "reassign_kit_"
# name -> help; a name ending in _total is a counter (its family's name without _total)
METRICS: dict[str, str] = {
    P + "run_info": "The run served (labels: run_id, mode); always 1.",
    P + "run_finished": "1 once the run ended (label state: done, submitted, stopped, ...).",
    P + "moves": "Moves of the plan by state (pending, moving, done, failed, cancelled, "
    "rolling_back).",
    P + "moves_planned": "Moves in the plan.",
    P + "moves_completed_total": "Moves completed by this run (completed events).",
    P + "moved_bytes_total": "Bytes the completed moves brought to their new replicas.",
    P + "bytes_left": "Bytes the new replicas still have to receive (the last sample).",
    P + "bytes_to_move": "Bytes the plan's new replicas receive in all.",
    P + "rate_bytes_per_second": "The run's measured replication rate (the ETA's).",
    P + "eta_seconds": "Seconds to the end, as the run estimates them (absent when unknown).",
    P + "broker_bytes_left": "Per broker: bytes its new replicas still have to receive.",
    P + "broker_received_bytes": "Per broker: bytes its new replicas received.",
    P + "broker_rate_bytes_per_second": "Per broker: bytes received per second between the "
    "last two samples.",
    P + "broker_throttle_bytes_per_second": "Per broker: the replication throttle rate this "
    "run keeps on it.",
    P + "throttle_bytes_per_second": "The run's throttle (the ceiling of an adaptive pace).",
    P + "retries_total": "Admin calls retried (label call).",
    P + "pace_decisions_total": "Adaptive pace decisions (labels action, reason).",
    P + "under_min_isr_outside_plan": "Partitions outside the plan under min ISR (the adaptive "
    "pace's last ISR view; absent before one).",
    P + "under_min_isr_outside_plan_with_elr": "Of those, how many have eligible leader "
    "replicas (KIP-966; absent where the brokers do not report ELR).",
    P + "warnings_total": "Warnings the run journaled.",
    P + "errors_total": "Errors the run journaled.",
    P + "last_event_timestamp_seconds": "Unix time of the last event heard.",
}

_MOVE_STATES = ("pending", "moving", "done", "failed", "cancelled", "rolling_back")
_EVENT_STATE = {
    "submitted": "moving",
    "adopted": "moving",
    "step_submitted": "moving",
    "step_completed": "moving",
    "rolling_back": "rolling_back",
    "completed": "done",
    "cancelled": "cancelled",
    "failed": "failed",
}


class RunMetrics:
    """The run's metrics (see the module docstring). ``on_event`` is the subscriber."""

    def __init__(self, status: Callable[[], Any] | None = None):
        self._status = status
        self._lock = threading.Lock()
        self.run_id = ""
        self.mode = ""
        self.finished: str | None = None
        self.planned: int | None = None
        self.completed = 0
        self.moved_bytes = 0
        self.sample: dict[str, Any] = {}
        self.broker_rate: dict[str, float] = {}
        self.broker_throttle: dict[str, float] = {}
        self._paced = False  # pace events seen: per-broker rates come from them
        self.throttle: float | None = None
        self.under_min_isr: float | None = None  # outside the plan, the pace's last ISR view
        self.under_min_isr_elr: float | None = None  # of those, with ELR members (None: unknown)
        self.retries: dict[str, int] = {}
        self.decisions: dict[tuple[str, str], int] = {}
        self.warnings = 0
        self.errors = 0
        self.odd_events = 0  # events whose fields were not what the engine writes
        self.last_ts: float | None = None
        self._moves: dict[tuple[str, int], str] = {}
        self._sizes: dict[tuple[str, int], int] = {}
        self._prev_received: tuple[float, dict[str, float]] | None = None
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.textfile: str | None = None
        self.textfile_failures = 0  # writes of the textfile that failed (said once, on stderr)
        self._textfile_failing = False
        self._textfile_written: float | None = None  # wall time of its last write

    def attach(self, run: Any) -> RunMetrics:
        """Hear ``run``'s events; its moves by state from ``run.status()`` at each scrape."""
        self._status = run.status
        run.subscribe(self.on_event)
        return self

    # ---- events ------------------------------------------------------------------------

    def on_event(self, e: Mapping[str, Any]) -> None:
        with self._lock:
            try:
                self._on_event(e)
            except (TypeError, ValueError, AttributeError):  # an odd event: not counted
                self.odd_events += 1
        if self.textfile and e.get("event") in ("sample", "run_finished"):
            self.refresh_textfile()

    def _on_event(self, e: Mapping[str, Any]) -> None:
        ev = e.get("event")
        ts = e.get("ts")
        if isinstance(ts, (int, float)):
            self.last_ts = float(ts)
        tp = (str(e.get("topic")), int(e.get("partition", -1))) if "topic" in e else None
        if ev == "run_started":
            self.run_id = str(e.get("run_id") or "")
            self.mode = str(e.get("mode") or "")
            self.planned = e.get("moves") if isinstance(e.get("moves"), int) else None
            opts = e.get("options") or {}
            if isinstance(opts, Mapping) and isinstance(opts.get("throttle"), int):
                self.throttle = float(opts["throttle"])
        elif ev == "submitted" and tp is not None:
            added = set(e.get("target") or []) - set(e.get("current") or [])
            self._sizes[tp] = int(e.get("size_bytes") or 0) * len(added)
        elif ev == "completed" and tp is not None:
            self.completed += 1
            self.moved_bytes += self._sizes.get(tp, 0)
        elif ev == "sample":
            self._on_sample(e)
        elif ev == "throttle_changed" and isinstance(e.get("rate"), (int, float)):
            self.throttle = float(e["rate"])
        elif ev == "pace_decision":
            self._paced = True
            # the cause (a fixed few), not the reason in words (numbers: one series each)
            key = (str(e.get("action") or ""), str(e.get("cause") or e.get("reason") or ""))
            self.decisions[key] = self.decisions.get(key, 0) + 1
            if e.get("broker") is not None and isinstance(e.get("new_rate"), (int, float)):
                self.broker_throttle[str(e["broker"])] = float(e["new_rate"])
            elif e.get("action") in ("pause", "resume"):
                sig = e.get("signals") or {}
                self._isr_view(sig.get("count"), sig.get("with_elr"))
        elif ev == "pace_sample":
            self._paced = True
            self._isr_view(e.get("under_min_isr"), e.get("under_min_isr_with_elr"))
            for b, row in (e.get("brokers") or {}).items():
                if isinstance(row, Mapping) and isinstance(row.get("rate"), (int, float)):
                    self.broker_throttle[str(b)] = float(row["rate"])
        elif ev == "retry":
            call = str(e.get("call") or "?")
            self.retries[call] = self.retries.get(call, 0) + 1
        elif ev == "warning":
            self.warnings += 1
        elif ev == "error":
            self.errors += 1
        elif ev == "run_finished":
            self.finished = str(e.get("state") or "?")
        if tp is not None and ev in _EVENT_STATE:
            self._moves[tp] = _EVENT_STATE[ev]
        elif tp is not None and ev == "error" and "target" in e:
            self._moves[tp] = "failed"  # a rejected submission

    def _isr_view(self, count: Any, with_elr: Any) -> None:
        """The last ISR view's counts (a count not measured keeps the last one)."""
        if _num(count) is None:
            return
        self.under_min_isr = _num(count)
        self.under_min_isr_elr = _num(with_elr)

    def _on_sample(self, e: Mapping[str, Any]) -> None:
        self.sample = dict(e)
        received = {str(b): float(v) for b, v in (e.get("received") or {}).items()}
        ts = float(e.get("ts") or 0.0)
        if self._prev_received is not None and ts > self._prev_received[0]:
            t0, prev = self._prev_received
            self.broker_rate = {
                b: max(0.0, (v - prev.get(b, 0.0)) / (ts - t0)) for b, v in received.items()
            }
        self._prev_received = (ts, received)
        rate = _num(e.get("throttle"))
        if rate is not None:
            self.throttle = rate
        if not self._paced:  # one rate: on the brokers receiving moves now
            inflight = e.get("inflight") or {}
            self.broker_throttle = {str(b): rate for b in inflight} if rate is not None else {}

    # ---- the collector -----------------------------------------------------------------

    def _run_counts(self) -> dict[str, int] | None:
        """The moves by state from the run's status (None: no status, or it failed)."""
        if self._status is None:
            return None
        try:
            st = self._status()
            return {
                "pending": st.pending,
                "moving": st.moving - st.rolling_back,
                "done": st.done,
                "failed": st.failed,
                "cancelled": st.cancelled,
                "rolling_back": st.rolling_back,
            }
        except Exception:  # noqa: BLE001 - a scrape must not fail on the run's state
            return None

    def _move_counts(self, from_run: dict[str, int] | None) -> dict[str, int]:
        if from_run is not None:
            return from_run
        counts = dict.fromkeys(_MOVE_STATES, 0)
        for s in self._moves.values():
            counts[s] += 1
        if self.planned is not None:
            counts["pending"] = max(0, self.planned - len(self._moves))
        return counts

    def collect(self) -> Iterator[Metric]:
        # the run's status asked before taking this lock: never wait on the run while holding
        # the lock its events come in under (a run and a scrape each waited on the other)
        from_run = self._run_counts()
        with self._lock:
            yield from self._collect(from_run)

    def _collect(self, from_run: dict[str, int] | None) -> Iterator[Metric]:
        def gauge(name: str, value: float | None, **labels: str) -> Metric | None:
            if value is None:
                return None
            g = GaugeMetricFamily(P + name, METRICS[P + name], labels=list(labels))
            g.add_metric(list(labels.values()), float(value))
            return g

        def per(name: str, values: Mapping[str, float], label: str = "broker") -> Metric:
            g = GaugeMetricFamily(P + name, METRICS[P + name], labels=[label])
            for k, v in sorted(values.items()):
                g.add_metric([str(k)], float(v))
            return g

        def counter(name: str, values: Mapping[tuple[str, ...], float], labels: list[str]):
            c = CounterMetricFamily(P + name, METRICS[P + name + "_total"], labels=labels)
            for k, v in sorted(values.items()):
                c.add_metric(list(k), float(v))
            return c

        s = self.sample
        out = [
            gauge("run_info", 1, run_id=self.run_id, mode=self.mode),
            gauge("run_finished", 1 if self.finished else 0, state=self.finished or ""),
            per("moves", self._move_counts(from_run), "state"),
            gauge("moves_planned", self.planned),
            counter("moves_completed", {(): self.completed}, []),
            counter("moved_bytes", {(): self.moved_bytes}, []),
            gauge("bytes_left", _num(s.get("bytes_left"))),
            gauge("bytes_to_move", _num(s.get("bytes_total"))),
            gauge("rate_bytes_per_second", _num(s.get("rate_bps"))),
            gauge("eta_seconds", _num(s.get("eta_s"))),
            per("broker_bytes_left", _nums(s.get("left"))),
            per("broker_received_bytes", _nums(s.get("received"))),
            per("broker_rate_bytes_per_second", self.broker_rate),
            per("broker_throttle_bytes_per_second", self.broker_throttle),
            gauge("throttle_bytes_per_second", self.throttle),
            counter("retries", {(k,): v for k, v in self.retries.items()}, ["call"]),
            counter("pace_decisions", dict(self.decisions), ["action", "reason"]),
            gauge("under_min_isr_outside_plan", self.under_min_isr),
            gauge("under_min_isr_outside_plan_with_elr", self.under_min_isr_elr),
            counter("warnings", {(): self.warnings}, []),
            counter("errors", {(): self.errors}, []),
            gauge("last_event_timestamp_seconds", self.last_ts),
        ]
        yield from (m for m in out if m is not None)

    def describe(self) -> list[Metric]:
        return []

    # ---- out ---------------------------------------------------------------------------

    def serve(self, port: int, addr: str = "127.0.0.1") -> RunMetrics:
        """Serve ``/metrics`` on ``addr:port`` in a daemon thread (UsageError when it cannot
        listen there: raised before the run sends anything)."""
        try:
            self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        except OSError as e:
            raise UsageError(
                f"--metrics-port {port}: cannot listen on {addr}:{port}: {e}"
            ) from None
        return self

    @property
    def port(self) -> int | None:
        return self._server.server_address[1] if self._server is not None else None

    def write_textfile(self, path: str) -> None:
        """The metrics to ``path`` for node-exporter: written to a temp file beside it, then
        renamed over it (prometheus-client's ``write_to_textfile``)."""
        write_to_textfile(os.fspath(path), self.registry)
        self._textfile_written = time.time()

    def refresh_textfile(self) -> None:
        """The textfile written again (at each sample and at the end). A write that fails
        (the disk full, its directory removed) is said once on stderr and tried again at the
        next sample; the run goes on: the figures are an aid to watching it, not part of it.
        Before, the error reached the run's guard on its listeners: a traceback on stderr at
        every sample of a run whose disk had filled."""
        path = self.textfile
        if not path:
            return
        try:
            self.write_textfile(path)
        except OSError as e:
            self.textfile_failures += 1
            if not self._textfile_failing:
                self._textfile_failing = True
                last = (
                    time.strftime(" of %H:%M:%S UTC", time.gmtime(self._textfile_written))
                    if self._textfile_written is not None
                    else ""
                )
                print(
                    f"reassign-kit: --metrics-textfile {path}: not written "
                    f"({e.strerror or e}); it keeps the figures of its last write{last}, "
                    "tried again at every sample; the run goes on",
                    file=sys.stderr,
                    flush=True,
                )
            return
        if self._textfile_failing:
            self._textfile_failing = False
            print(
                f"reassign-kit: --metrics-textfile {path}: written again "
                f"({self.textfile_failures} write(s) failed)",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        """The last textfile write, then the server stopped."""
        self.refresh_textfile()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _nums(m: Any) -> dict[str, float]:
    if not isinstance(m, Mapping):
        return {}
    return {str(k): float(v) for k, v in m.items() if _num(v) is not None}


def open_metrics(port: int | None, textfile: str | None, status: Callable[[], Any] | None = None):
    """A RunMetrics serving on ``port`` and/or writing ``textfile``; None when neither."""
    if port is None and not textfile:
        return None
    m = RunMetrics(status)
    m.textfile = textfile
    if port is not None:
        m.serve(port)
    if textfile:
        m.write_textfile(textfile)  # the path is writable, before anything is sent
    return m
