"""What survives a full collection between a run's polls joins the heap the run froze
(``gcpause.between_polls``): the next full collections walk only what came since. Before, each
walked every move done and every partition it changed again (at 200,000 partitions a third
of the run's CPU time); the frozen objects go back at the run's end, a cycle among them is
collected then."""

from __future__ import annotations

import gc
import weakref

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run


class Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_what_survives_a_full_collection_between_polls_stays_frozen_until_the_run_ends(tmp_path):
    sim = SimCluster(4, bandwidth=4 * MB, tick=1.0)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(16)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(batch_size=4, incremental=True, wait=True, throttle=1 * MB)
    run = Run(sim, plan, opts, journal_path=tmp_path / "run.jsonl", clock=sim.now, sleep=sim.sleep)
    frozen: list[int] = []
    keep: list = []
    cycles: list[weakref.ref] = []
    real_poll = run.parts.loop.poll

    def poll():
        frozen.append(gc.get_freeze_count())
        keep.extend([i] for i in range(3000))  # long-lived objects: full collections come due
        c = Cycle()
        cycles.append(weakref.ref(c))  # dropped by the next poll: garbage in a cycle
        return real_poll()

    run.parts.loop.poll = poll
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    # the collector's count of long-lived objects from nothing (a full collection of an empty
    # oldest generation): full collections come due at this run's pace, whatever ran before
    gc.freeze()
    gc.collect()
    gc.unfreeze()
    gc.set_threshold(50, 2, 2)
    try:
        assert run.run().state == "done"
    finally:
        gc.set_threshold(*before)
    assert frozen[-1] > frozen[0] + 3000, frozen  # what the polls kept was frozen meanwhile
    assert gc.get_freeze_count() == 0  # all of it put back at the end
    gc.collect()
    assert all(ref() is None for ref in cycles)  # no cycle outlives the run
