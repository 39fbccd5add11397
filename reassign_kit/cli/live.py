"""The paced run's live view on a terminal: per-broker progress bars, bytes left,
rate, ETA and the stuck moves, redrawn in place with ``rich``; the state-change lines (the
plain printer's) scroll above it. Piped, in CI or on a dumb terminal the plain printer alone
runs: one line per state change, a progress line every 30 s.

``LiveState`` folds the run's events (the journal's, as ``Run.subscribe`` hands them over)
into what the view shows; ``render`` draws it. Both are pure of I/O so a test can feed a
simulated run and read the text; ``LiveView`` is the ``rich.live.Live`` around them."""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, TextIO

from ..watch.disk_waits import DiskWaits
from ..watch.from_journal import is_intermediate_step
from ..watch.text import fmt_bytes, fmt_rate, run_progress_line

RATE_WINDOW_S = 30.0  # a broker's rate: bytes received over the last samples within this
MAX_STUCK_ROWS = 10
_FALSY = ("", "0", "false", "no", "off")


def wants_live(stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """The live view for a person at a terminal; plain lines for a pipe, a file, CI (``CI``
    set to anything but a false value, as every CI service does), ``TERM=dumb`` or
    ``RK_PLAIN=1``."""
    env = os.environ if env is None else env
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return (
        tty
        and env.get("CI", "").strip().lower() in _FALSY
        and env.get("TERM", "") != "dumb"
        and env.get("RK_PLAIN", "").strip().lower() in _FALSY
    )


class LiveState:
    """What the live view shows, folded from the run's events (thread-safe: the run's thread
    feeds it while the view's thread draws it)."""

    def __init__(self, moves: int, sample_interval: float = 5.0) -> None:
        self.moves = moves
        self.sample_interval = sample_interval
        self.started = time.time()
        self.sample: dict[str, Any] | None = None
        self.history: deque[tuple[float, dict[int, float]]] = deque()
        self.stuck: dict[str, dict[str, Any]] = {}
        self.disks = DiskWaits()
        self.counts = {"done": 0, "moving": 0, "pending": moves, "failed": 0, "cancelled": 0}
        self.state = "starting"
        self.finished = False
        self.ended: float | None = None
        self._lock = threading.Lock()

    def on_event(self, e: Mapping[str, Any]) -> None:
        with self._lock:
            self._fold(e)

    def _fold(self, e: Mapping[str, Any]) -> None:
        ev = e.get("event")
        self.disks.fold(e)
        tp = f"{e.get('topic')}-{e.get('partition')}" if "topic" in e else None
        if ev == "run_started":
            self.state = "running"
            self.started = float(e.get("ts") or self.started)
        elif ev == "sample":
            self.sample = dict(e)
            for k in ("done", "moving", "pending"):
                if isinstance(e.get(k), int):
                    self.counts[k] = e[k]
            rec = e.get("received")
            if isinstance(rec, Mapping):
                ts = float(e.get("ts") or time.time())
                self.history.append((ts, {int(b): float(n) for b, n in rec.items()}))
                while self.history and ts - self.history[0][0] > RATE_WINDOW_S:
                    self.history.popleft()
        elif ev == "stuck" and tp:
            self.stuck[tp] = dict(e)
        elif ev in ("completed", "cancelled", "failed", "adopted") and tp:
            if ev != "completed" or not is_intermediate_step(e):
                self.stuck.pop(tp, None)
            if ev in ("cancelled", "failed"):
                self.counts[ev] += 1
        elif ev in ("paused", "resumed"):
            self.state = "paused" if ev == "paused" else "running"
        elif ev == "cancel_started":
            self.state = "cancelling"
        elif ev == "run_finished":
            self.state = str(e.get("state") or "finished")
            self.finished = True
            self.ended = float(e.get("ts") or time.time())
            for k, src in (
                ("done", "completed"),
                ("moving", "still_moving"),
                ("pending", "pending"),
                ("failed", "failed"),
                ("cancelled", "cancelled"),
            ):
                if isinstance(e.get(src), int):
                    self.counts[k] = e[src]

    @property
    def all_done(self) -> bool:
        """The run finished with every move complete."""
        c = self.counts
        return self.finished and c["done"] == self.moves and not (c["moving"] or c["pending"])

    def _elapsed(self, now: float) -> str:
        s = max(0, int((now if self.ended is None else min(now, self.ended)) - self.started))
        return f"{s // 60}m{s % 60:02d}s"

    def broker_rates(self) -> dict[int, float]:
        """Bytes per second each broker took in over the last ``RATE_WINDOW_S``."""
        if len(self.history) < 2:
            return {}
        (t0, r0), (t1, r1) = self.history[0], self.history[-1]
        if t1 <= t0:
            return {}
        return {b: max(0.0, (n - r0.get(b, 0.0)) / (t1 - t0)) for b, n in r1.items()}

    def render(self, now: float | None = None):
        """The view: a headline (moves, state, elapsed), the run's progress line (the same
        words as the plain printer and the panel), a table per receiving broker, the stuck
        moves."""
        from rich.console import Group
        from rich.text import Text

        with self._lock:
            now = time.time() if now is None else now
            c = self.counts
            head = (
                f"paced run {self.state}: {c['done']}/{self.moves} moves done, "
                f"{c['moving']} moving, {c['pending']} pending"
                + (f", {c['failed']} failed" if c["failed"] else "")
                + (f", {c['cancelled']} cancelled" if c["cancelled"] else "")
                + f"  ({self._elapsed(now)})"
            )
            parts: list[Any] = [Text(head, style="bold")]
            waits = self.disks.line()
            if waits:
                parts.append(Text(waits, style="yellow"))
            s = self.sample
            if s is None:
                parts.append(
                    Text(
                        f"waiting for the first progress sample (every {self.sample_interval:g} s)"
                    )
                )
                return Group(*parts)
            received = {int(b): float(n) for b, n in (s.get("received") or {}).items()}
            left = {int(b): float(n) for b, n in (s.get("left") or {}).items()}
            inflight = {int(b): int(n) for b, n in (s.get("inflight") or {}).items()}
            if self.all_done:  # the last sample came before the last bytes: all are in now
                received = {b: received.get(b, 0.0) + left.get(b, 0.0) for b in received | left}
                left, inflight = {}, {}
                total = s.get("bytes_total")
                copied = fmt_bytes(int(total)) if isinstance(total, int | float) else "?"
                parts.append(Text(f"progress: 100.0%  {copied} copied in {self._elapsed(now)}"))
            else:  # the paced line's words; the ETA on a line of its own (no wrapping)
                line = run_progress_line(s) or ""
                head_, sep, eta = line.partition("  ETA ")
                parts += [Text(head_)] + ([Text("ETA " + eta)] if sep else [])
            table = self._broker_table(received, left, inflight)
            if table.row_count:
                parts.append(table)
            parts += self._stuck_lines()
            return Group(*parts)

    def _broker_table(
        self, received: dict[int, float], left: dict[int, float], inflight: dict[int, int]
    ) -> Any:  # rich.table.Table
        """One row per receiving broker: a bar, its share copied, bytes, rate, moves in.
        Called under the lock."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        rates = self.broker_rates()
        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for col, justify in (
            ("broker", "right"),
            ("copied", "left"),
            ("%", "right"),
            ("received", "right"),
            ("left", "right"),
            ("rate", "right"),
            ("moves in", "right"),
        ):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for b in sorted(set(received) | set(left)):
            got, rest = received.get(b, 0.0), left.get(b, 0.0)
            total = got + rest
            pct = 100.0 * got / total if total else 100.0
            table.add_row(
                str(b),
                ProgressBar(total=total or 1.0, completed=got if total else 1.0, width=30),
                f"{pct:.1f}%",
                fmt_bytes(int(got)),
                fmt_bytes(int(rest)),
                fmt_rate(rates.get(b)) if b in rates else "-",
                str(inflight.get(b, 0)),
            )
        return table

    def _stuck_lines(self) -> list[Any]:
        """The stuck moves, at most MAX_STUCK_ROWS of them. Called under the lock."""
        from rich.text import Text

        parts: list[Any] = []
        if self.stuck:
            parts.append(Text(f"stuck moves ({len(self.stuck)}):", style="bold red"))
            for tp, e in list(self.stuck.items())[:MAX_STUCK_ROWS]:
                # the run's reason (a target broker down) when it gives one, as the panel
                why = (
                    e.get("reason") or f"no progress for {float(e.get('no_progress_s') or 0):.0f} s"
                )
                parts.append(
                    Text(
                        f"  {tp}: {why}, {fmt_bytes(e.get('bytes_copied'))} copied "
                        f"(policy: {e.get('policy')})",
                        style="red",
                    )
                )
            if len(self.stuck) > MAX_STUCK_ROWS:
                parts.append(Text(f"  … and {len(self.stuck) - MAX_STUCK_ROWS} more"))
        return parts


class LiveView:
    """``rich.live.Live`` over a ``LiveState``: redrawn twice a second in place; what is
    printed meanwhile (the state-change lines) scrolls above it. Left on screen at the end."""

    def __init__(self, state: LiveState, stream: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        self.state = state
        self._live = Live(
            get_renderable=state.render,
            console=Console(file=stream),
            refresh_per_second=2,
            redirect_stdout=True,
            redirect_stderr=True,
            transient=False,
        )

    def __enter__(self) -> LiveView:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.refresh()
        self._live.stop()
