"""KIP-179 progress report: statuses, percentages, rates, ETA (pure core, no cluster)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.gateway import BrokerInfo, ReplicaLogInfo
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition
from reassign_kit.watch.build import build_report
from reassign_kit.watch.from_journal import samples_from_events, steps_from_events
from reassign_kit.watch.progress import ProgressTracker, observe, progress, watch
from reassign_kit.watch.report import (
    DONE,
    IN_SYNC,
    NOT_HOSTED,
    PENDING,
    UNKNOWN_BROKER,
    UNKNOWN_PARTITION,
    UNKNOWN_TOPIC,
    Observation,
)

TP = TopicPartition("my_topic", 0)
MB = 1 << 20


def log(b, size, tp=TP, future=False, lag=0, d="/d0"):
    return ReplicaLogInfo(b, tp, d, size, lag, future)


def obs(ts, state, logs, plan=None, counts=None, brokers=frozenset(range(6)), steps=None):
    plan = plan or Plan.of([Move(TP, (0, 3))])
    return Observation(
        ts,
        plan,
        counts if counts is not None else {"my_topic": 2},
        frozenset(brokers),
        {state.tp: state} if state else {},
        logs,
        steps or {},
    )


def test_kip179_statuses_in_one_report():
    plan = Plan.of(
        [
            Move(TP, (0, 1)),
            Move(TopicPartition("asdf", 0), (1,)),
            Move(TopicPartition("my_topic", 42), (1,)),
            Move(TopicPartition("my_topic", 1), (0, 42)),
        ]
    )
    tp1 = TopicPartition("my_topic", 1)
    o = Observation(
        100.0,
        plan,
        {"my_topic": 2},
        frozenset({0, 1, 2}),
        {
            TP: PartitionState(TP, (0, 2, 1), (0, 2), 0, adding=(1,), removing=(2,)),
            tp1: PartitionState(tp1, (2,), (2,), 2),
        },
        [log(0, 10 * MB), log(2, 10 * MB), log(1, 4 * MB), log(2, 5 * MB, tp=tp1)],
    )
    rep = build_report(o)
    got = {(r.topic, r.partition, r.broker): r.status for r in rep.replicas}
    assert got[("my_topic", 0, 0)] == IN_SYNC
    assert got[("my_topic", 0, 1)].startswith("Behind: 6291456 bytes (40.0% of leader's log")
    assert "DescribeLogDirs" in got[("my_topic", 0, 1)]
    assert got[("asdf", 0, 1)] == UNKNOWN_TOPIC
    assert got[("my_topic", 42, 1)] == UNKNOWN_PARTITION
    assert got[("my_topic", 1, 42)] == UNKNOWN_BROKER
    assert got[("my_topic", 1, 0)] == NOT_HOSTED
    parts = {(p.topic, p.partition): p.status for p in rep.partitions}
    assert parts[("my_topic", 0)] == "Moving (step 1 of 1)"
    assert parts[("my_topic", 1)] == PENDING
    assert parts[("asdf", 0)] == UNKNOWN_TOPIC
    df = rep.to_pandas()
    assert list(df.columns[:4]) == ["topic", "partition", "broker", "status"]
    assert len(df) == 6
    text = rep.render_text()
    assert text.splitlines()[0].split() == ["Topic", "Partition", "Broker", "Status"]
    assert "Broker does not host this partition" in text


def test_future_log_reports_messages_behind():
    st_ = PartitionState(TP, (0, 3), (0, 3), 0)
    rep = build_report(
        obs(1.0, st_, [log(0, 8 * MB), log(3, 8 * MB), log(3, 2 * MB, future=True, lag=1234)])
    )
    r = [r for r in rep.replicas if r.broker == 3][0]
    assert r.messages_behind == 1234 and "1234 messages behind" in r.status


def test_lifecycle_rates_eta_and_done():
    """Pending → Behind (rising %) → In sync → Done, ETA from the samples."""
    tracker = ProgressTracker(Plan.of([Move(TP, (0, 3))]), window_s=100)
    size = 10 * MB
    pending = PartitionState(TP, (0, 1), (0, 1), 0)
    r0 = tracker.update(obs(0.0, pending, [log(0, size), log(1, size)]))
    assert r0.status == PENDING
    assert [r.status for r in r0.replicas] == [IN_SYNC, NOT_HOSTED]
    moving = PartitionState(TP, (0, 3, 1), (0, 1), 0, adding=(3,), removing=(1,))
    pcts, etas = [], []
    for t in range(1, 10):  # 1 MiB/s copied
        rep = tracker.update(obs(float(t), moving, [log(0, size), log(1, size), log(3, t * MB)]))
        assert rep.replicas[1].status.startswith("Behind")
        pcts.append(rep.pct)
        etas.append(rep.ts + rep.eta_s)
    assert pcts == sorted(pcts) and pcts[0] > 0
    # rate 1 MiB/s: finish predicted at t=10 from every sample
    assert all(abs(e - 10.0) < 1e-6 for e in etas)
    insync = PartitionState(TP, (0, 3, 1), (0, 1, 3), 0, adding=(3,), removing=(1,))
    r = tracker.update(obs(10.0, insync, [log(0, size), log(1, size), log(3, size)]))
    assert [x.status for x in r.replicas] == [IN_SYNC, IN_SYNC] and r.pct == 100.0
    assert r.status.startswith("Moving")
    done = tracker.update(
        obs(11.0, PartitionState(TP, (0, 3), (0, 3), 0), [log(0, size), log(3, size)])
    )
    assert done.status == DONE and done.done and done.eta_s == 0.0
    s = tracker.series_pandas()
    assert set(s["level"]) == {"plan", "partition", "broker"}
    assert s[s.level == "plan"]["pct"].is_monotonic_increasing


def test_step_info_from_journal_and_samples_roundtrip():
    evs = [
        {
            "ts": 1.0,
            "event": "step_submitted",
            "topic": "my_topic",
            "partition": 0,
            "step": 2,
            "steps": 4,
        },
        {"ts": 2.0, "event": "submitted", "topic": "my_topic", "partition": 0},
    ]
    steps = steps_from_events(evs)
    assert steps == {TP: (2, 4)}
    moving = PartitionState(TP, (0, 3, 1), (0, 1), 0, adding=(3,), removing=(1,))
    o = obs(5.0, moving, [log(0, 4 * MB), log(3, 1 * MB)], steps=steps)
    rep = build_report(o)
    assert rep.partitions[0].status == "Moving (step 2 of 4)"
    ev = {"ts": 5.0, "event": "sample", **rep.sample_event()}
    back = samples_from_events([ev, {"event": "sample", "ts": 1}])
    assert back[0].remaining == {("my_topic", 0, 0): 0, ("my_topic", 0, 3): 3 * MB}
    later = obs(7.0, moving, [log(0, 4 * MB), log(3, 3 * MB)], steps=steps)
    rep2 = build_report(later, back)
    assert rep2.rate_bps == MB and rep2.eta_s == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=100 * MB), min_size=2, max_size=12))
def test_percent_bounded_and_eta_nonnegative(sizes):
    tracker = ProgressTracker(Plan.of([Move(TP, (0, 3))]))
    moving = PartitionState(TP, (0, 3), (0,), 0, adding=(3,))
    for t, have in enumerate(sorted(sizes)):
        rep = tracker.update(obs(float(t), moving, [log(0, 100 * MB), log(3, have)]))
        assert 0.0 <= rep.pct <= 100.0
        assert rep.eta_s is None or rep.eta_s >= 0


class FakeGateway:
    """Just enough of the Gateway protocol for ``observe`` (pure tests of the wiring)."""

    def cluster_permissions(self):  # the cluster does not say: nothing checked
        return None

    def topic_permissions(self, topics):
        return None

    def __init__(self, states, logs):
        self.states, self.logs, self.calls = states, logs, []

    def brokers(self):
        return [BrokerInfo(b, "127.0.0.1", 9000 + b) for b in range(4)]

    def topic_partition_counts(self, topics=None):
        return {"my_topic": 1}

    def describe_partitions(self, tps):
        self.calls.append(("describe", sorted(tps)))
        return {tp: self.states[tp] for tp in tps if tp in self.states}

    def describe_log_dirs(self, brokers, tps=None):
        self.calls.append(("logdirs", list(brokers)))
        return self.logs


def test_observe_and_progress_through_a_gateway():
    gw = FakeGateway({TP: PartitionState(TP, (0, 1), (0, 1), 0)}, [log(0, MB), log(1, MB)])
    plan = Plan.of([Move(TP, (0, 1)), Move(TopicPartition("nope", 0), (7,))])
    rep = progress(gw, plan, clock=lambda: 5.0)
    assert rep.partitions[0].status == UNKNOWN_TOPIC or rep.partitions[1].status == UNKNOWN_TOPIC
    assert ("logdirs", [0, 1]) in gw.calls  # only live brokers of the plan are asked
    o = observe(gw, plan, clock=lambda: 1.0)
    assert o.ts == 1.0 and TopicPartition("nope", 0) not in o.states


def test_watch_refreshes_until_done():
    from rich.console import Console

    gw = FakeGateway({TP: PartitionState(TP, (0, 1), (0, 1), 0)}, [log(0, MB), log(1, MB)])
    buf = io.StringIO()
    seen = []
    tr = watch(
        gw,
        Plan.of([Move(TP, (0, 1))]),
        console=Console(file=buf, width=120, force_terminal=False),
        on_report=seen.append,
        sleep=lambda s: None,
    )
    assert len(seen) == 1 and seen[0].done and tr.reports == seen
    assert "plan: Done" in buf.getvalue()


def test_rates_from_the_executors_journal_samples():
    """execute.Run journals bytes copied per move and step; progress() turns that into rates."""
    moving = PartitionState(TP, (3, 0, 1), (0, 1), 0, adding=(3,), removing=(1,))
    gw = FakeGateway({TP: moving}, [log(0, 10 * MB), log(1, 10 * MB), log(3, 5 * MB)])
    plan = Plan.of([Move(TP, (3, 0))])

    def sample(ts, copied, step=1):
        mv = {"topic": TP.topic, "partition": 0, "bytes": copied, "size": 10 * MB, "step": step}
        return {"ts": ts, "event": "sample", "run_id": "r", "moves": [mv]}

    evs = [sample(0.0, 1 * MB), sample(2.0, 3 * MB), sample(4.0, 5 * MB)]
    rep = progress(gw, plan, evs, clock=lambda: 4.5)
    p = rep.partitions[0]
    assert p.rate_bps == MB and p.eta_s == 5.0
    assert rep.rate_bps == MB and rep.eta_s == 5.0
    # a new step starts a new series: no rate across steps
    evs2 = [sample(0.0, 9 * MB, step=1), sample(2.0, 1 * MB, step=2)]
    assert progress(gw, plan, evs2, clock=lambda: 2.5).partitions[0].rate_bps is None
    # stale samples (older than the window) give no rate
    assert progress(gw, plan, evs, clock=lambda: 500.0).rate_bps is None


def test_package_level_api_and_ops(tmp_path):
    import reassign_kit
    from reassign_kit.operations import execute as ops

    gw = FakeGateway({TP: PartitionState(TP, (0, 1), (0, 1), 0)}, [log(0, MB), log(1, MB)])
    plan_file = tmp_path / "plan.json"
    Plan.of([Move(TP, (0, 1))]).write(str(plan_file))
    assert reassign_kit.progress(gw, str(plan_file)).done
    assert ops.progress(gw, Plan.of([Move(TP, (0, 3))]), []).status == PENDING


def test_superset_of_the_target_is_moving_not_pending():
    # the controller finished; a broker's metadata still lists the old replica
    stale = PartitionState(TP, (0, 3, 1), (0, 1), 0)
    rep = build_report(obs(1.0, stale, [log(0, MB), log(1, MB), log(3, MB)]))
    assert rep.partitions[0].status == "Moving"
    assert build_report(obs(1.0, PartitionState(TP, (3, 0), (3, 0), 3), [])).status == PENDING


def test_steps_execute_refuses_others_in_flight_without_additional(tmp_path, monkeypatch):
    """``--execute --parallel-replica-count`` is a paced run: the one preflight refuses other
    reassignments in flight without --additional -> an error naming them, nothing sent."""
    from reassign_kit.cli import reassign as reassign_cli
    from reassign_kit.cluster.simulate import SimCluster
    from reassign_kit.errors import ReassignmentInProgressError

    monkeypatch.chdir(tmp_path)
    sim = SimCluster(6, bandwidth=MB)
    sim.add_topic("busy", [[0, 1, 2]], 4 * MB)
    sim.add_topic("mine", [[0, 1, 2]], MB)
    sim.stall(TopicPartition("busy", 0))
    sim.alter_reassignments({TopicPartition("busy", 0): (3, 1, 2)})
    sent = []
    real = sim.alter_reassignments
    sim.alter_reassignments = lambda t, *a, **k: (sent.append(t), real(t, *a, **k))[1]
    args = reassign_cli.build_parser().parse_args(
        ["--execute", "--bootstrap-server", "x:1", "--reassignment-json-file", "plan.json",
         "--parallel-replica-count", "1"]
    )  # fmt: skip
    plan = Plan.of([Move(TopicPartition("mine", 0), (3, 4, 5))])
    with pytest.raises(ReassignmentInProgressError, match=r"busy-0.*--additional"):
        reassign_cli.HANDLERS["execute"](args, sim, plan)
    assert sent == [] and not list(tmp_path.iterdir())
