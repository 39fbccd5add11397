"""How a run's progress reads (watch/progress.py's family): the percentage, the bytes,
the rate, the ETA and its range, and the paced CLI's progress line — one text for every front
end (the CLI, the panel, ``--progress``). Pure."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any


def percent_of(have: int | None, of: int | None) -> float | None:
    if have is None or of is None:
        return None
    if of <= 0:
        return 100.0
    return max(0.0, min(100.0, 100.0 * have / of))


def eta_text(eta_s: float | None, reason: str | None = None) -> str:
    """The ETA as every front end shows it: ``1m02s``, ``0h..`` or ``unknown (reason)``."""
    return fmt_eta(eta_s, reason)


def number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def run_progress_line(sample: Mapping[str, Any]) -> str | None:
    """The paced run's progress line from one of its ``sample`` events (the paced CLI prints
    it, the panel shows it): percent of the bytes copied, how much, the rate, the ETA with
    its range and the finish time."""
    total, left = sample.get("bytes_total"), sample.get("bytes_left")
    if not isinstance(total, int | float) or not isinstance(left, int | float):
        return None
    pct = 100.0 if not total else percent_of(int(total - left), int(total))
    rng = sample.get("eta_range_s")
    low, high = (
        (rng[0], rng[1]) if isinstance(rng, list | tuple) and len(rng) == 2 else (None, None)
    )
    ts = sample.get("ts")
    return (
        f"progress: {fmt_pct(pct)}  {fmt_bytes(int(left))} of {fmt_bytes(int(total))} to "
        f"copy  {fmt_rate(sample.get('rate_bps'))}  "
        + eta_range_text(
            number(sample.get("eta_s")),
            sample.get("eta_reason") if isinstance(sample.get("eta_reason"), str) else None,
            number(low),
            number(high),
            number(ts),
        )
    )


def eta_range_text(
    eta: float | None,
    reason: str | None,
    low: float | None,
    high: float | None,
    now: float | None,
) -> str:
    """``ETA 1m02s [55s–1m10s], finish 04:12:33 UTC [04:12:26–04:12:41]``: the point, the
    range (10th–90th percentile) and the finish time at ``now`` (a Unix time)."""
    text = f"ETA {eta_text(eta, reason)}"
    if eta is None:
        return text
    if low is not None and high is not None:
        text += f" [{eta_text(low)}–{eta_text(high)}]"
    if now is not None:
        text += f", finish {fmt_clock(now + eta)}"
        if low is not None and high is not None:
            text += f" [{fmt_clock(now + low)}–{fmt_clock(now + high)}]"
    return text


def fmt_clock(ts: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(ts))


def fmt_pct(p: float | None) -> str:
    return "?%" if p is None else f"{p:.1f}%"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "? B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def fmt_rate(r: float | None) -> str:
    return "rate ?" if r is None else f"{fmt_bytes(int(r))}/s"


def fmt_eta(s: float | None, reason: str | None = None) -> str:
    if s is None:
        return f"unknown ({reason})" if reason else "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"
