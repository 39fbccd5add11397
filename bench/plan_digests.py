"""The plan digest of every snapshot shape the suite plans (tests/plan_shapes.py, more seeds) and
of the bench's cases at a small size, in process: run before and after a change to the planner
that must not change its plans, then compare the two files.

    .venv/bin/python bench/plan_digests.py /tmp/before.json
    .venv/bin/python bench/plan_digests.py /tmp/after.json --compare /tmp/before.json
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), HERE]

BENCH_CASES = [
    "decommission",
    "add-brokers",
    "uneven-racks",
    "rack-repair",
    "rack-repair-decommission",
    "bytes-goal",
    "decommission-120",
]


def digests() -> dict[str, str]:
    from plan_shapes import shapes

    from reassign_kit.planner.in_process import plan_in_process

    out: dict[str, str] = {}
    for name, case in shapes(full=True).items():
        snap, params = case()
        try:
            out[name] = plan_in_process(snap, params).plan.digest()
        except Exception as e:  # a refusal is a result too: the same one before and after
            out[name] = f"{type(e).__name__}: {e}"
    import bench_planner as bp

    for case in BENCH_CASES:
        with tempfile.TemporaryDirectory() as d:
            meta = bp.generate(12_000, case, d)
            snap = bp._snapshot_local(d)
            out[f"bench-{case}"] = plan_in_process(snap, bp._params(d, meta)).plan.digest()
    return out


def main() -> None:
    out = digests()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"{len(out)} plans")
    if "--compare" in sys.argv:
        before = json.load(open(sys.argv[sys.argv.index("--compare") + 1]))
        diff = sorted(k for k in set(before) | set(out) if before.get(k) != out.get(k))
        for k in diff:
            print(f"DIFFERENT {k}: {before.get(k)} -> {out.get(k)}")
        print(f"{len(out) - len(diff)} same, {len(diff)} different")
        sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
