"""The what-if's own terms on the held-out shapes: its defaults without a calibration and the
calibration's measures, varied one grid at a time (decided on the fit half, even seeds).

Each seed runs once as a paced run on the simulator (``bench_heldout.run_shape``); then, per
variant, the what-if of each shape without a mid-run change (``whatif.what_if``, the options
given), uncalibrated and calibrated on the journal of the other shape of the same cluster:
within 15% of the makespan, and the median error, per half.

- ``burst B lag L share S``: the idle quota credit given back (1: all, as Kafka's windows;
  0: none), and the completion lag and share of the throttle taken without a calibration;
- ``cal: share`` (``calibrate``'s, the median ``throttle_share``), ``cal: pace`` (the median
  ``run_pace`` of the partner's samples as the share).

Usage: nice -n 10 .venv/bin/python bench/bench_heldout_whatif.py [--seeds 0-47]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_heldout as bh  # noqa: E402
from heldout_shapes import shape_of  # noqa: E402

from reassign_kit import whatif  # noqa: E402
from reassign_kit.eta import model  # noqa: E402
from reassign_kit.moves.journal import read_events  # noqa: E402

Cal = Callable[[whatif.Calibration, str], whatif.Calibration]


@contextmanager
def defaults(burst: float, lag: float, share: float) -> Iterator[None]:
    """The what-if with these defaults and this share of the idle credit given back."""
    old = (whatif.DEFAULT_LAG_S, whatif.DEFAULT_SHARE, model.simulate)
    simulate = old[2]

    def with_burst(*a: Any, **k: Any) -> model.Forecast:
        return simulate(*a, **{"burst": burst, **k})

    whatif.DEFAULT_LAG_S, whatif.DEFAULT_SHARE, model.simulate = lag, share, with_burst
    try:
        yield
    finally:
        whatif.DEFAULT_LAG_S, whatif.DEFAULT_SHARE, model.simulate = old


def by_pace(cal: whatif.Calibration, journal: str) -> whatif.Calibration:
    paces = [
        float(e["run_pace"])
        for e in read_events(journal)
        if e.get("event") == "sample" and e.get("run_pace")
    ]
    return replace(cal, share=min(1.0, statistics.median(paces))) if paces else cal


def judge(rows: list[dict[str, Any]], workdir: Path, cal_of: Cal) -> str:
    cells = []
    for half in ("fit", "judged"):
        plain, cal = [], []
        for r in rows:
            if r["half"] != half or r["changed"]:
                continue
            shape, partner = shape_of(r["seed"]), str(workdir / f"seed-{r['seed'] ^ 1}.jsonl")
            plan, opts, m = shape.plan(), bh.options_of(shape), r["makespan"]
            c = cal_of(whatif.calibrate([partner]), partner)
            for out, given in ((plain, None), (cal, c)):
                w = whatif.what_if(shape.sim(), plan, opts, given, given_only=True)
                out.append(abs(w.predicted_seconds - m) / m)
        for name, errs in (("uncal", plain), ("cal", cal)):
            ok = sum(e <= 0.15 for e in errs)
            cells.append(f"{half} {name} {ok}/{len(errs)} {100 * statistics.median(errs):.0f}%")
    return " | ".join(cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-47")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="heldout-wi-") as d:
        workdir, rows = Path(d), []
        for seed in bh.parse_seeds(args.seeds):
            shape = shape_of(seed)
            out = bh.run_shape(shape, workdir / f"seed-{seed}.jsonl")
            changed = bool(shape.throttle_change or shape.restart)
            rows.append(
                {"seed": seed, "half": shape.half, "makespan": out["makespan"], "changed": changed}
            )
        for burst in (0.0, 1.0):
            for lag in (0.0, 0.5, 1.0):
                for share in (1.0, 0.95, 0.9):
                    with defaults(burst, lag, share):
                        line = judge(rows, workdir, lambda c, j: c)
                    print(f"burst {burst:g} lag {lag:g} share {share:g}: {line}", flush=True)
        print(f"cal: share: {judge(rows, workdir, lambda c, j: c)}", flush=True)
        print(f"cal: pace:  {judge(rows, workdir, by_pace)}", flush=True)


if __name__ == "__main__":
    main()
