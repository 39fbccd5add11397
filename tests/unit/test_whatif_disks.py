"""The what-if draws each log dir's predicted usage over the run, its peak named (whatif.py
``DiskLayout`` / ``DiskPeak``): read from the cluster (a model cluster here, its replicas in
named dirs on one filesystem, moved-out copies kept until deleted), the prediction lands on
the model's own run; the source's copy counts until its deletion; a snapshot's recorded growth
raises the peak; the chart marks each peak."""

from __future__ import annotations

import dataclasses

from reassign_kit import whatif
from reassign_kit.cluster.simulate import MB
from reassign_kit.cluster.simulate_disks import DiskSim
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.ui.charts import disk_usage_figure

TOTAL = 200 * MB
SMALL = 3
OPTS = ExecuteOptions(throttle=4 * MB, batch_size=2, incremental=True, wait=True)


def cluster(delete_delay_s: float = 60.0) -> tuple[DiskSim, Plan]:
    """Broker 3's two dirs share one 200 MB filesystem holding 4 x 20 MB leaving and 20 MB of
    other files; 4 x 15 MB arrive (end state 80 MB)."""
    sim = DiskSim([1, 2, SMALL], bandwidth=50 * MB, delete_delay_s=delete_delay_s, tick=0.5)
    dirs = ["/data-0", "/data-1"]
    for b in (1, 2, SMALL):
        sim.disks.names[b] = dirs
        sim.disks.fs[(b, dirs[1])] = (b, dirs[0])
        sim.disks.total[(b, dirs[0])] = sim.disks.total[(b, dirs[1])] = 10 * TOTAL
    sim.disks.total[(SMALL, dirs[0])] = sim.disks.total[(SMALL, dirs[1])] = TOTAL
    sim.disks.other[(SMALL, dirs[0])] = 20 * MB
    sim.add_topic("leave", [[SMALL]] * 4, 20 * MB)
    sim.add_topic("arrive", [[1], [2], [1], [2]], 15 * MB)
    for p in (1, 3):  # half of them in the second dir
        sim.partitions[TopicPartition("leave", p)].dirs[SMALL] = dirs[1]
    plan = Plan.of(
        [Move(TopicPartition("arrive", p), (SMALL,)) for p in range(4)]
        + [Move(TopicPartition("leave", p), (1 + p % 2,)) for p in range(4)]
    )
    return sim, plan


def model_run_peak(sim: DiskSim, plan: Plan) -> int:
    """The ground truth on the model: the run itself, broker 3's filesystem sampled."""
    Run(sim, plan, OPTS, None, clock=sim.now, sleep=sim.sleep).run()
    return max(n for _, n in sim.usage[(SMALL, "/data-0")])


def test_the_predicted_peak_of_each_filesystem_is_the_runs_own():
    sim, plan = cluster()
    wi = whatif.what_if(sim, plan, OPTS, given_only=True)
    mine = [p for p in wi.disk_peaks if p.broker == SMALL]
    assert len(mine) == 1 and mine[0].log_dir == "/data-0"  # one filesystem, two dirs
    assert mine[0].start_bytes == 100 * MB
    truth = model_run_peak(*cluster())
    assert abs(mine[0].peak_bytes - truth) <= 0.02 * truth, (mine[0], truth)
    text = "\n".join(wi.lines())
    assert f"broker {SMALL} /data-0: peak" in text, text
    assert wi.to_json_obj()["disk_peaks"][0]["broker"] == SMALL
    df = wi.disks_to_pandas()
    assert set(df["broker"]) >= {SMALL} and df["bytes"].max() == mine[0].peak_bytes


def test_the_sources_copy_counts_until_it_is_deleted():
    kept = whatif.what_if(*cluster(), OPTS, given_only=True).disk_peaks
    sim, plan = cluster()
    layout = whatif.disk_layout(sim, sim.broker_ids, [m.tp for m in plan])
    assert layout is not None and layout.delete_delay_s == 60.0
    # the same cluster with files deleted at once: the copies leaving free sooner
    states = sim.describe_partitions([m.tp for m in plan])
    sizes = {tp: int(sp.size_bytes) for tp, sp in sim.partitions.items()}
    _, gone, _ = whatif.predict_runs(
        plan,
        states,
        sizes,
        sim.broker_ids,
        OPTS,
        given_only=True,
        layout=dataclasses.replace(layout, delete_delay_s=0.0),
    )
    small = lambda peaks: next(p for p in peaks if p.broker == SMALL)  # noqa: E731
    # arrivals first: with the copies kept, the ceiling holds the later arrivals longer
    assert small(kept).peak_bytes >= small(gone).peak_bytes
    assert small(kept).peak_bytes <= 0.85 * TOTAL


def test_recorded_growth_raises_the_predicted_peak():
    sim, plan = cluster()
    layout = whatif.disk_layout(sim, sim.broker_ids, [m.tp for m in plan])
    assert layout is not None
    states = sim.describe_partitions([m.tp for m in plan])
    sizes = {tp: int(sp.size_bytes) for tp, sp in sim.partitions.items()}
    grown = dataclasses.replace(
        layout, growth={TopicPartition("arrive", p): 0.05 * MB for p in range(4)}
    )
    peaks = [
        next(
            p
            for p in whatif.predict_runs(
                plan, states, sizes, sim.broker_ids, OPTS, given_only=True, layout=lay
            )[1]
            if p.broker == SMALL
        )
        for lay in (layout, grown)
    ]
    assert peaks[1].peak_bytes > peaks[0].peak_bytes


def test_no_sizes_reported_no_disk_part():
    sim, plan = cluster()
    sim.disks.total.clear()
    wi = whatif.what_if(sim, plan, OPTS, given_only=True)
    assert wi.disk_peaks == () and "disk" not in "\n".join(wi.lines())


def test_the_chart_marks_each_peak():
    wi = whatif.what_if(*cluster(), OPTS, given_only=True)
    fig = disk_usage_figure(wi.disk_usage, wi.disk_peaks)
    marks = [t for t in fig.data if t.mode == "markers+text"]
    assert marks and marks[0].text[0].startswith("peak ")


def test_a_modelled_run_held_for_space_that_never_frees_ends_saying_so():
    """Arrivals growing 0.5 MB/s each fill broker 3 past its ceiling: the model's run would
    wait for ever; the what-if ends it and says why."""
    sim, plan = cluster(delete_delay_s=0.0)
    layout = whatif.disk_layout(sim, sim.broker_ids, [m.tp for m in plan])
    assert layout is not None
    grown = dataclasses.replace(
        layout, growth={TopicPartition("arrive", p): 0.5 * MB for p in range(4)}
    )
    states = sim.describe_partitions([m.tp for m in plan])
    sizes = {tp: int(sp.size_bytes) for tp, sp in sim.partitions.items()}
    rows, _, _ = whatif.predict_runs(
        plan, states, sizes, sim.broker_ids, OPTS, given_only=True, layout=grown
    )
    assert rows[0]["state"].startswith("held: "), rows
    assert "broker 3 /data-0" in rows[0]["state"], rows


def test_a_snapshots_recorded_dirs_place_each_replica_where_it_is():
    """From a snapshot, a replica counts on the dir the snapshot recorded, not the first."""
    from reassign_kit.snapshot.snapshot import take_snapshot

    sim, plan = cluster()
    snap = take_snapshot(sim)
    layout = whatif.disk_layout(snap, sim.broker_ids, [m.tp for m in plan])
    assert layout is not None
    assert layout.where[(SMALL, TopicPartition("leave", 1))] == "/data-1"
    assert layout.where[(SMALL, TopicPartition("leave", 0))] == "/data-0"


def leaving_first() -> tuple[DiskSim, Plan]:
    """``cluster()``; run largest first, the leaving ones (20 MB) go before the arrivals: how
    long their files stay decides whether the arrivals land beside them."""
    return cluster()


def small_peak(sim: DiskSim, plan: Plan) -> tuple[int, list[str]]:
    opts = dataclasses.replace(
        OPTS, disk_ceiling=None, batch_size=4, incremental=False, order="largest-first"
    )
    wi = whatif.what_if(sim, plan, opts, given_only=True)
    return next(p for p in wi.disk_peaks if p.broker == SMALL).peak_bytes, wi.lines()


def test_each_brokers_own_delete_delay_is_read():
    """Broker 3 says log.segment.delete.delay.ms=0 (DescribeConfigs): its moved-out copies
    go at once and its predicted peak drops to where it starts; not said, 60 s is assumed
    and the what-if says so once, naming the brokers."""
    from reassign_kit.cluster.simulate_disks import DELETE_DELAY_KEY

    sim, plan = leaving_first()
    assumed, lines = small_peak(sim, plan)
    said = [ln for ln in lines if DELETE_DELAY_KEY in ln]
    assert len(said) == 1 and "[1, 2, 3]" in said[0] and "60 s" in said[0], lines
    wi = whatif.what_if(*cluster(), OPTS, given_only=True)
    assert wi.to_json_obj()["disk_notes"] == list(wi.notes) and len(wi.notes) == 1
    sim, plan = leaving_first()
    sim.alter_broker_configs({b: {DELETE_DELAY_KEY: "0"} for b in (1, 2, SMALL)})
    layout = whatif.disk_layout(sim, sim.broker_ids, [m.tp for m in plan])
    assert layout is not None and layout.delete_delays == {1: 0.0, 2: 0.0, SMALL: 0.0}
    at_once, lines = small_peak(sim, plan)
    assert not [ln for ln in lines if DELETE_DELAY_KEY in ln], lines
    assert at_once == 100 * MB  # the leaving copies gone before the arrivals land
    assert assumed > at_once + 40 * MB, (assumed, at_once)


def test_a_bad_or_unreadable_delay_is_the_default_said():
    from reassign_kit.cluster.simulate_disks import DELETE_DELAY_KEY

    sim, plan = leaving_first()
    sim.alter_broker_configs({1: {DELETE_DELAY_KEY: "-5"}, 2: {DELETE_DELAY_KEY: "soon"}})
    sim.alter_broker_configs({SMALL: {DELETE_DELAY_KEY: "30000"}})
    layout = whatif.disk_layout(sim, sim.broker_ids, [m.tp for m in plan])
    assert layout is not None and layout.delete_delays == {SMALL: 30.0}
    assert len(layout.notes) == 1 and "[1, 2]" in layout.notes[0], layout.notes
