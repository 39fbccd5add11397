"""The simulator under a paced incremental run whose completions are spread over each tick
(partition sizes uniform over 0.5-1.5 MiB, seed 7): 200 brokers taking in 1 MiB/s each, 2,000
moves in flight, a poll per model second, driven by ``run.Run``. Printed per size: the run's
CPU seconds, the simulator's share of them (``SimCluster._advance``), the model time and the
last completion. bench_exec_scale's moves are all one size, so they end together, a tick at
a time; here a tick holds many completions, each of which changes the rates of its group.

    .venv/bin/python bench/bench_sim_spread.py 3000 30000
"""

from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BROKERS = 200


def one(n: int) -> str:
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.model import Move, Plan
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    rnd = random.Random(7)
    sim = SimCluster(BROKERS, bandwidth=1 * MB, tick=1.0)
    sim.add_topic(
        "t",
        [[p % BROKERS, (p + 1) % BROKERS] for p in range(n)],
        [int(rnd.uniform(0.5, 1.5) * MB) for _ in range(n)],
    )
    plan = Plan.of(
        Move(tp, tuple((b + 2) % BROKERS for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(
        incremental=True,
        batch_size=2000,
        wait=True,
        throttle=50 * MB,
        additional=True,
        poll_interval_ms=1000,
    )
    spent = [0.0]
    advance = sim._advance

    def timed(dt: float) -> None:
        s = time.process_time()
        advance(dt)
        spent[0] += time.process_time() - s

    sim._advance = timed
    c = time.process_time()
    res = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep).run()
    return (
        f"{n:>9,} partitions: {res.state}, {time.process_time() - c:.1f} s CPU, of it the "
        f"simulator {spent[0]:.1f} s; model time {sim.now():.1f} s"
    )


if __name__ == "__main__":
    for size in sys.argv[1:] or ["3000", "30000"]:
        print(one(int(size)), flush=True)
