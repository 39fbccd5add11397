"""Per-broker throttle rates in a run and the adaptive pace driving them, on the
simulator: the rates reach the brokers that need them, the end cleans them and puts an
operator's rate back, a change racing the loop's own sync is never lost; ``--pace adaptive``
backs off the broker whose latency is over the objective and not the others, pauses (never
cancels) while a partition outside the plan is under min ISR, and journals every decision
with its signals. The health source is a model of latency over the replication load the
simulator carries (not a broker mock: the cluster is the simulator, the gateway is real)."""

from __future__ import annotations

import ladder_model
import pytest

from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import UsageError
from reassign_kit.health.signals import BrokerHealth, HealthSample, PartitionIsr
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition


class SimLatency:
    """Produce p99 per broker = ``base_ms`` (+ ``extra_ms`` of a sick broker) + ``ms_per_mb``
    x the replication rate it carries now (its throttle while a copy runs through it)."""

    name = "sim-latency"

    def __init__(self, sim: SimCluster, base_ms=10.0, ms_per_mb=8.0):
        self.sim, self.base_ms, self.ms_per_mb = sim, base_ms, ms_per_mb
        self.extra_ms: dict[int, float] = {}
        self.under: frozenset[TopicPartition] = frozenset()
        self.closed = 0
        self.isr: dict | None = None  # the ISR view's detail (ISR / min ISR / ELR sizes)

    def load(self, b: int) -> float:
        busy = False
        for sp in self.sim.active.values():
            if sp.target is None:
                continue
            new = [r for r in sp.target if r not in sp.isr]
            if new and (b in new or b == sp.leader):
                busy = True
        if not busy:
            return 0.0
        r = self.sim.effective_broker_configs(b).get(FOLLOWER_RATE)
        return min(float(r) if r else self.sim.bandwidth, self.sim.bandwidth)

    def sample(self) -> HealthSample:
        brokers = {
            b: BrokerHealth(
                b,
                produce_p99_ms=self.base_ms
                + self.extra_ms.get(b, 0.0)
                + self.ms_per_mb * self.load(b) / MB,
            )
            for b in self.sim.broker_ids
        }
        return HealthSample(
            self.sim.now(), self.name, brokers, under_min_isr=self.under, isr=self.isr
        )

    def close(self) -> None:
        self.closed += 1


def cluster(n_parts=8, size=20 * MB) -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB, tick=0.5)
    sim.add_topic("a", [[0, 1] for _ in range(n_parts)], size)
    sim.add_topic("other", [[0, 1]], MB)
    plan = Plan.of([Move(TP("a", p), (2, 3)) for p in range(n_parts)])
    return sim, plan


# ---- per-broker rates (throttles/configs.py ThrottleKeeper) -----------------------------------


def test_per_broker_rates_reach_the_brokers_and_the_end_puts_the_operators_rate_back(tmp_path):
    sim, plan = cluster(4, 10 * MB)
    sim.broker_cfg[3] = {LEADER_RATE: "777", FOLLOWER_RATE: "777"}  # the operator's
    opts = ExecuteOptions(batch_size=4, incremental=True, throttle=MB, wait=True)
    run = Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)
    seen = []

    def on(e):
        if e["event"] == "run_started":  # before the first submission
            run.set_broker_throttles({2: 3 * MB})
        if e["event"] == "sample" and sim.active:
            seen.append(dict(sim.throttles.broker_rates))

    run.subscribe(on)
    res = run.run()
    assert res.state == "done" and seen
    assert seen[0] == {0: MB, 1: MB, 2: 3 * MB, 3: MB}  # 3: ours while it moves, not 777
    assert sim.throttles.broker_rates == {3: 777}  # nothing left that no move needs ...
    assert sim.broker_cfg[3] == {LEADER_RATE: "777", FOLLOWER_RATE: "777"}  # ... theirs back
    assert not any(sim.broker_cfg.get(b) for b in (0, 1, 2))
    changed = [
        e for e in read_events(str(tmp_path / "j.jsonl")) if e["event"] == "throttle_changed"
    ]
    assert changed[0]["broker_rates"] == {"2": 3 * MB}


def test_per_broker_rates_refused_without_a_throttle_and_bad_values():
    sim, plan = cluster(1)
    run = Run(sim, plan, ExecuteOptions(), None, clock=sim.now, sleep=sim.sleep)
    with pytest.raises(UsageError, match="no throttle"):
        run.set_broker_throttles({0: MB})
    throttled = Run(sim, plan, ExecuteOptions(throttle=MB), None, clock=sim.now, sleep=sim.sleep)
    with pytest.raises(UsageError, match="broker 2"):
        throttled.set_broker_throttles({2: 0})


def test_per_broker_rates_during_the_loops_own_sync_are_never_lost(tmp_path):
    """As for one rate (test_eta_throttle_change.py): the per-broker rates arrive while the
    loop's sync writes the old ones; the mapping is part of the cache key, so the next sync
    writes it."""
    sim, plan = cluster(2, 40 * MB)
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True)
    real_alter = sim.alter_broker_configs
    state = {"fired": False, "rates": []}

    class Racing:
        def __getattr__(self, name):
            return getattr(sim, name)

        def alter_broker_configs(self, changes):
            if not state["fired"]:
                state["fired"] = True
                run.set_broker_throttles({2: 4 * MB, 3: 4 * MB})  # mid-sync, another thread
            return real_alter(changes)

    run = Run(Racing(), plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)

    def on(e):
        if e["event"] == "sample" and state["fired"] and len(state["rates"]) < 3:
            state["rates"].append(dict(sim.throttles.broker_rates))

    run.subscribe(on)
    run.run()
    assert state["fired"] and state["rates"], "the race happened and was observed"
    assert state["rates"][-1] == {0: MB, 1: MB, 2: 4 * MB, 3: 4 * MB}


# ---- the adaptive pace ---------------------------------------------------------------------


def adaptive(sim, plan, tmp_path, health, **kw):
    opts = ExecuteOptions(
        batch_size=2,
        incremental=True,
        throttle=8 * MB,
        throttle_floor=MB // 4,
        pace="adaptive",
        slo_produce_p99="30ms",
        wait=True,
        **kw,
    )
    j = str(tmp_path / "j.jsonl")
    return Run(sim, plan, opts, j, clock=sim.now, sleep=sim.sleep, health=health), j


def test_adaptive_pace_backs_off_the_sick_broker_alone_and_cleans_up(tmp_path):
    sim, plan = cluster()
    health = SimLatency(sim)
    run, j = adaptive(sim, plan, tmp_path, health)
    sick_at = []

    def on(e):
        if sim.now() > 1000:
            run.stop()  # a bound: the assertions below then say what went wrong
        if e["event"] == "sample" and sim.now() >= 20 and not sick_at:
            health.extra_ms[3] = 100.0  # broker 3 stalls (a GC pause, a slow disk)
            sick_at.append(sim.now())

    run.subscribe(on)
    res = run.run()
    assert res.state == "done" and sick_at and health.closed == 1
    ev = read_events(j)
    dec = [e for e in ev if e["event"] == "pace_decision"]
    assert all(MB // 4 <= e["new_rate"] <= 8 * MB for e in dec if "new_rate" in e)
    # broker 3 backed off within 30 s of its signal; never raised while sick
    b3 = [e for e in dec if e.get("broker") == 3 and e["ts"] >= sick_at[0]]
    assert b3 and b3[0]["action"] == "decrease" and b3[0]["ts"] - sick_at[0] <= 30
    assert all(e["action"] == "decrease" for e in b3)
    assert b3[0]["signals"]["produce_p99_ms"] > 30 and b3[0]["signals"]["limit_ms"] == 30
    # the others were not backed off after it (their latency held)
    late = [e for e in dec if e["ts"] >= sick_at[0] and e.get("broker") in (0, 1, 2)]
    assert late and all(
        e["action"] == "increase" or e["signals"]["produce_p99_ms"] > 30 for e in late
    )
    # the rates reached the cluster per broker
    per = [
        th.broker_rates for _, th in sim.throttle_history if len(set(th.broker_rates.values())) > 1
    ]
    assert per, "the brokers carried different rates at some point"
    assert sim.throttles.broker_rates == {} and not any(sim.broker_cfg.values())


def test_adaptive_pace_pauses_submissions_while_a_partition_outside_the_plan_is_under_min_isr(
    tmp_path,
):
    sim, plan = cluster(6, 10 * MB)
    health = SimLatency(sim)
    run, j = adaptive(sim, plan, tmp_path, health)
    window: dict[str, float] = {}

    def on(e):
        t = sim.now()
        if e["event"] == "submitted" and "start" not in window:
            window["start"] = t
            health.under = frozenset({TP("other", 0), TP("a", 0)})  # other-0: outside the plan
            # other-0 keeps an eligible leader replica (KIP-966): said, and still a pause
            health.isr = {TP("other", 0): PartitionIsr(1, 2, 1), TP("a", 0): PartitionIsr(1, 2, 0)}
        if t > 1000:
            run.stop()  # a bound: the assertions below then say what went wrong
        if e["event"] == "pace_sample" and "start" in window and t - window["start"] > 20:
            if "end" not in window:
                health.under = frozenset({TP("a", 0)})  # only the plan's own: no pause
                window["end"] = t

    run.subscribe(on)
    res = run.run()
    assert res.state == "done" and not res.cancelled and "end" in window
    ev = read_events(j)
    pauses = [e for e in ev if e["event"] == "pace_decision" and e["action"] in ("pause", "resume")]
    assert [e["action"] for e in pauses] == ["pause", "resume"]
    assert "other-0" in pauses[0]["reason"] and "a-0" not in pauses[0]["reason"]
    assert (
        "1 partition(s) outside the plan under min ISR, 1 with eligible leaders"
        in (pauses[0]["reason"])
    )
    assert pauses[0]["signals"]["partitions"] == {"other-0": {"isr": 1, "min_isr": 2, "elr": 1}}
    while_paused = [e for e in ev if e["event"] == "pace_sample" and e["paused"]]
    assert while_paused and all(
        (e["under_min_isr"], e["under_min_isr_with_elr"]) == (1, 1) for e in while_paused
    )
    paused_at, resumed_at = pauses[0]["ts"], pauses[1]["ts"]
    subs = [e["ts"] for e in ev if e["event"] == "submitted"]
    assert not [t for t in subs if paused_at < t < resumed_at]
    assert [t for t in subs if t >= resumed_at], "submissions went on after the resume"
    assert not [e for e in ev if e["event"] in ("cancelled", "rolling_back")]


def test_adaptive_options_refused_by_name():
    for kw, msg in (
        ({"pace": "adaptive", "slo_produce_p99": "50ms"}, "needs --throttle"),
        ({"pace": "adaptive", "throttle": MB}, "needs --slo-produce-p99"),
        ({"pace": "adaptive", "throttle": MB, "slo_produce_p99": "x"}, "--slo-produce-p99"),
        (
            {
                "pace": "adaptive",
                "throttle": MB,
                "slo_produce_p99": "5ms",
                "throttle_floor": 2 * MB,
            },
            "--throttle-floor",
        ),
        ({"slo_produce_p99": "50ms"}, "only meaningful with --pace adaptive"),
        ({"pace": "fast"}, "--pace must be one of"),
    ):
        with pytest.raises(UsageError, match=msg):
            ExecuteOptions(**kw).validate()


def never_above_the_start(sim, start: int) -> None:
    """Every rate written only rose (the start rate is written before the first move:
    ``pace._pace_start``) and never above the start rate: a source without signal never speeds
    the pace up."""
    per: dict[int, list[int]] = {}
    for _, th in sim.throttle_history:
        for b, r in th.broker_rates.items():
            per.setdefault(b, []).append(r)
    assert per and max(max(v) for v in per.values()) <= start
    for b, v in per.items():
        assert v == sorted(v), (b, v)  # the ramp only rises; no decision moved it


def test_the_api_takes_the_adaptive_pace_and_a_source_without_signal_never_speeds_up(tmp_path):
    """``reassign_kit.execute(..., pace="adaptive")`` as ``--pace adaptive``; on a gateway the
    probe cannot use (the simulator) the source has no signal: warned, every broker held at
    its start rate (written before the first move), and the run still
    finishes."""
    import reassign_kit

    sim, plan = cluster(2, 4 * MB)
    j = str(tmp_path / "j.jsonl")
    res = reassign_kit.execute(
        sim,
        plan,
        journal=j,
        rollback_path=str(tmp_path / "rb.json"),
        throttle=4 * MB,
        pace="adaptive",
        slo_produce_p99="50ms",
        wait=True,
    )
    assert res.state == "done"
    ev = read_events(j)
    started = [e for e in ev if e["event"] == "pace_started"]
    assert started and started[0]["source"] == "probe"  # asked for; what it got, below
    # the source opens on its own thread: this short run may end before its first sample
    assert {e["source"] for e in ev if e["event"] == "pace_sample"} <= {"none"}
    from reassign_kit.cluster.probe import probe_for

    assert "no health probe" in (probe_for(sim).sample().degraded or "")
    assert not [e for e in ev if e["event"] == "pace_decision" and e.get("action") == "increase"]
    never_above_the_start(sim, started[0]["start_rate"])


def test_a_metrics_source_that_is_down_never_speeds_the_pace_up(tmp_path):
    """``--health-source scrape:`` on an exporter that does not answer (a real HTTP client on
    a closed port): degraded, the probe's fallback has no signal on the simulator either, so
    every broker stays at its start rate (reached along the start's ramp) and the run finishes;
    the warning is journaled."""
    sim, plan = cluster(2, 4 * MB)
    j = str(tmp_path / "j.jsonl")
    opts = ExecuteOptions(
        throttle=4 * MB,
        pace="adaptive",
        slo_produce_p99="50ms",
        health_source="scrape:0=http://127.0.0.1:1/metrics",
        wait=True,
    )

    def sleep(seconds: float) -> None:  # the source opened before the second poll
        sim.sleep(seconds)
        if run.shared.health_opener is not None:
            run.shared.health_opener.join(30)

    run = Run(sim, plan, opts, j, clock=sim.now, sleep=sleep)
    assert run.run().state == "done"
    assert run.shared.health_opener is not None and not run.shared.health_opener.is_alive()
    ev = read_events(j)
    started = [e for e in ev if e["event"] == "pace_started"][0]
    assert started["source"].startswith("scrape")
    assert any(e["event"] == "warning" and "pace does not rise" in e["message"] for e in ev)
    assert not [e for e in ev if e["event"] == "pace_decision" and e.get("action") == "increase"]
    never_above_the_start(sim, started["start_rate"])


def test_pace_decisions_carry_a_cause_for_the_metrics_label(tmp_path):
    from reassign_kit.outputs.metrics import RunMetrics

    sim, plan = cluster(4, 8 * MB)
    health = SimLatency(sim)
    health.extra_ms[3] = 100.0
    run, j = adaptive(sim, plan, tmp_path, health)
    run.run()
    m = RunMetrics()
    for e in read_events(j):
        m.on_event(e)
    assert ("decrease", "p99 over the objective") in m.decisions
    assert all(len(reason) < 40 for _, reason in m.decisions)


def test_whatif_replays_a_journals_pace_with_another_tuning(tmp_path):
    from reassign_kit.pacing.controller import pace_line
    from reassign_kit.whatif import replay_pace

    sim, plan = cluster(4, 16 * MB)  # long enough for 11-s persists
    health = SimLatency(sim)
    health.extra_ms[3] = 100.0
    run, j = adaptive(sim, plan, tmp_path, health)
    assert run.run().state == "done"
    same = replay_pace(j)
    b3 = [d for d in same if d.get("broker") == 3]
    assert b3 and all(d["action"] == "decrease" for d in b3)
    assert b3[0]["new_rate"] == b3[0]["old_rate"] // 2  # the run's beta
    gentler = [d for d in replay_pace(j, beta=0.9) if d.get("broker") == 3]
    assert gentler[0]["new_rate"] == int(gentler[0]["old_rate"] * 0.9)
    assert len(gentler) > len(b3)  # smaller steps down: more of them to the floor
    assert pace_line(gentler[0]).startswith("pace broker 3:")
    static = tmp_path / "static.jsonl"
    sim2, plan2 = cluster(1, MB)
    Run(
        sim2, plan2, ExecuteOptions(throttle=MB), str(static), clock=sim2.now, sleep=sim2.sleep
    ).run()
    with pytest.raises(UsageError, match="no adaptive pace"):
        replay_pace(str(static))


def test_the_loop_polls_while_the_health_source_opens_and_submits_after_its_first_sample(
    tmp_path, monkeypatch
):
    """The probe creates its canary topic and waits for its leaders before its first sample
    (0.3-0.6 s on an idle sandbox, more on a busy cluster): it opens on a thread, the loop
    goes on polling meanwhile (a stop is served), and nothing is submitted before the first
    sample — whose ISR view may call for a pause. A source that opens after the run ended is
    closed all the same, and the end waits for it."""
    import threading
    import time

    sim, plan = cluster(2, 4 * MB)
    health = SimLatency(sim)
    seen: list[tuple[int, int]] = []

    def slow_open(spec, *, brokers, warn, default_factory):
        deadline = time.monotonic() + 10.0  # bounded: a loop that waits for it fails below
        while sim.calls["list_reassignments"] < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append((sim.calls["list_reassignments"], sim.calls["alter_reassignments"]))
        return health

    monkeypatch.setattr("reassign_kit.health.sources.open_source", slow_open)
    opts = ExecuteOptions(
        batch_size=2, throttle=8 * MB, pace="adaptive", slo_produce_p99="30ms", wait=True
    )

    def sleep(seconds: float) -> None:
        sim.sleep(seconds)
        time.sleep(0.001)  # the opener's turn (the simulator's polls take no real time)

    run = Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sleep)
    assert run.run().state == "done"
    ((polls, submitted),) = seen
    assert polls >= 5 and submitted == 0  # polling went on, nothing sent before a sample
    assert sim.calls["alter_reassignments"] > 0  # and after it, the plan
    assert health.closed == 1
    assert not [t for t in threading.enumerate() if t.name == "rk-health-open"]


def test_a_run_that_ends_while_its_source_opens_closes_it(tmp_path, monkeypatch):
    import threading

    sim, plan = cluster(2, 4 * MB)
    health = SimLatency(sim)
    release = threading.Event()

    def slow_open(spec, *, brokers, warn, default_factory):
        release.wait(10.0)
        return health

    monkeypatch.setattr("reassign_kit.health.sources.open_source", slow_open)
    opts = ExecuteOptions(throttle=8 * MB, pace="adaptive", slo_produce_p99="30ms", wait=True)
    run = Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)

    def on(e):
        if e["event"] == "pace_started":
            run.stop()
            release.set()

    run.subscribe(on)
    assert run.run().state == "stopped"
    assert sim.calls["alter_reassignments"] == 0
    assert health.closed == 1  # opened late, closed by its opener; the end waited for it


def test_a_raise_reaches_the_brokers_in_steps(tmp_path):
    """The controller raises a healthy broker (slow start); the brokers' configs get there
    in 1-s steps (``pace_ramp.Ramp``: ten, fewer with room, at least two, as the decision
    journals), never by more than one step's share of the raise at once, and the journal's
    samples say both the target and what is written."""
    sim, plan = cluster(4, 40 * MB)
    health = SimLatency(sim, ms_per_mb=1.0)  # well within the 30 ms objective at any rate
    run, j = adaptive(sim, plan, tmp_path, health, sample_interval=1.0)  # a sample each second
    run.run()
    ev = read_events(j)
    start = next(e for e in ev if e["event"] == "pace_started")["start_rate"]
    ups = [e for e in ev if e["event"] == "pace_decision" and e.get("action") == "increase"]
    assert ups, "the healthy brokers were never raised"
    raised = {e["broker"] for e in ups}
    seen: dict[int, list[int]] = {}
    for _, th in sim.throttle_history:
        for b, r in th.broker_rates.items():
            if b in raised and (not seen.get(b) or seen[b][-1] != r):
                seen.setdefault(b, []).append(r)
    for b in raised:
        rises = [y - x for x, y in zip(seen[b], seen[b][1:], strict=False) if y > x]
        assert len(rises) >= 2, f"broker {b} went {seen[b]}"  # in steps, not one write
        top = max(e["new_rate"] for e in ups if e["broker"] == b) - start
        steps = min(e["ramp_steps"] for e in ups if e["broker"] == b)  # journaled per raise
        assert 2 <= steps <= 10 and max(rises) <= top // steps + 1
    assert seen[min(raised)][0] == start  # written before the first move, not ramped
    samples = [e for e in ev if e["event"] == "pace_sample"]
    assert any(r["written"] < r["rate"] for e in samples for r in e["brokers"].values())


def test_the_start_rate_is_written_before_the_first_move_and_copied_at_from_its_first_second(
    tmp_path,
):
    """Kafka's replication quota is a rate over 11 one-second windows, and an end idle since
    its windows expired moves at its limit from the first second (the simulator's quota, as
    bench_eta measured on the sandbox). The start rate was ramped up from the floor after the
    first move: the windows filled as the limit rose, so the fetchers took twice the rate
    written by the ramp's end, a surge the quota then kept in its 11-s rhythm (bench_pace_ladder,
    tight: over the objective about half of every run at any length). Every broker's first rate
    is now the start rate, written before the first submission, and with no signal to change
    it no second copies more than it out of the source (broker 0 leads every partition)."""
    from reassign_kit.cluster.quota import QUOTA_WINDOWS

    class Unmeasured(SimLatency):  # no p99 at all: the pace holds every broker where it starts
        def sample(self) -> HealthSample:
            s = super().sample()
            brokers = {b: BrokerHealth(b) for b in s.brokers}
            return HealthSample(s.ts, self.name, brokers, under_min_isr=frozenset())

    sim, plan = cluster(4, 40 * MB)
    sim.quota_windows = QUOTA_WINDOWS
    out: list[tuple[float, float]] = []  # (time, bytes broker 0 sent to the new replicas)

    def sleep(seconds: float) -> None:
        sim.sleep(seconds)
        sent = 0.0
        for sp in sim.partitions.values():
            for b in (2, 3) if sp.tp.topic == "a" else ():  # copying: so far; done: all of it
                sent += sp.copied.get(b, sp.size_bytes if b in sp.replicas else 0.0)
        out.append((sim.now(), sent))

    opts = ExecuteOptions(
        batch_size=4,
        throttle=8 * MB,
        throttle_floor=MB // 4,
        pace="adaptive",
        slo_produce_p99="30ms",
        wait=True,
    )
    j = str(tmp_path / "j.jsonl")
    run = Run(sim, plan, opts, j, clock=sim.now, sleep=sleep, health=Unmeasured(sim))
    assert run.run().state == "done"
    ev = read_events(j)
    start = next(e for e in ev if e["event"] == "pace_started")["start_rate"]
    first_sub = min(e["ts"] for e in ev if e["event"] == "submitted")
    assert not [e for e in ev if e["event"] == "pace_decision" and e.get("broker") is not None]
    writes = [(ts, th.broker_rates) for ts, th in sim.throttle_history if th.broker_rates]
    assert writes and writes[0][0] <= first_sub
    assert set(writes[0][1].values()) == {start}, writes[0]  # the start itself, not the floor
    pairs = [(a, b) for a, b in zip(out, out[1:], strict=False) if b[0] - a[0] >= 1.0]
    assert len(pairs) >= 10, out  # the copy ran for ten seconds and more
    for (t0, n0), (t1, n1) in pairs:
        assert (n1 - n0) / (t1 - t0) <= start * 1.01, (t0, t1, (n1 - n0) / MB, start / MB)


def _caps_run(tmp_path, sick: int | None, slo: str, disk: float = 50 * MB):
    """A run of 12 moves through every broker (0,1 -> 2,3: each new replica fetches from
    broker 0) with --max-moves-per-broker 4 and --pace adaptive up to 8 MB/s, the new replicas
    taking in at most ``disk`` bytes/s each; its journal's events and the moves in flight
    after each sleep."""
    sim, plan = cluster(12, 8 * MB)
    sim.bandwidth = float(disk)
    health = SimLatency(sim)
    if sick is not None:
        health.extra_ms[sick] = 100.0  # slow throughout
    opts = ExecuteOptions(
        batch_size=12,
        incremental=True,
        throttle=8 * MB,
        throttle_floor=MB // 4,
        max_moves_per_broker=4,
        pace="adaptive",
        slo_produce_p99=slo,
        wait=True,
    )
    inflight: list[tuple[float, int]] = []

    def sleep(seconds: float) -> None:
        sim.sleep(seconds)
        inflight.append((sim.now(), len(sim.list_reassignments())))

    j = str(tmp_path / "j.jsonl")
    run = Run(sim, plan, opts, j, clock=sim.now, sleep=sleep, health=health)
    assert run.run().state == "done"
    return read_events(j), inflight


def test_a_sick_broker_comes_down_by_its_rate_and_then_its_moves_at_once(tmp_path):
    """--pace adaptive with --max-moves-per-broker 4 (the maximum): each broker starts at one
    move at a time; broker 3, over the objective throughout, is never raised: its rate is
    halved at every decrease, its cap kept at one (nothing left to cut there). As every move
    goes through it, one move is in flight at a time."""
    ev, inflight = _caps_run(tmp_path, sick=3, slo="30ms")
    cuts = [e for e in ev if e["event"] == "pace_decision" and e.get("broker") == 3]
    assert len(cuts) >= 2 and all(e["action"] == "decrease" for e in cuts)
    assert all(e["new_rate"] < e["old_rate"] and e["new_cap"] == e["old_cap"] == 1 for e in cuts)
    assert max(n for _, n in inflight) == 1


def test_the_caps_on_moves_rise_where_the_copy_is_bound_by_its_rate(tmp_path):
    """The same run on a healthy cluster whose disks take more than the rate (50 MB/s per new
    replica, the rate 8 MB/s): the first move's leader sends its whole rate, so each broker's
    first raise lifts its cap from one with its rate (by the room), every broker's within two
    polls of the first window that saw the run's load (settle_s), and the run then has more
    than one move in flight."""
    ev, inflight = _caps_run(tmp_path, sick=None, slo="100ms")
    first_move = min(e["ts"] for e in ev if e["event"] == "submitted")
    ups = [e for e in ev if e["event"] == "pace_decision" and e["action"] == "increase"]
    firsts = {e["broker"]: e for e in reversed(ups)}
    assert sorted(firsts) == [0, 1, 2, 3], ups
    for e in firsts.values():
        assert e["old_cap"] == 1 and e["new_cap"] > 1, e
        assert e["ts"] - first_move <= 5.0 + 2 * 1.0  # settle_s and two polls of 1 s
    assert max(n for _, n in inflight) > 1


def test_the_caps_on_moves_hold_where_the_disks_bound_the_copy(tmp_path):
    """The same healthy run where the disks take 1 MB/s per new replica, under the rate
    (the start's 4 MB/s, then 8): more moves would only share those bytes and put their own
    on the same disks, so no cap rises from its one move while the rates do (the latency has
    room); one move is in flight at a time, as a run without caps' first seconds."""
    ev, inflight = _caps_run(tmp_path, sick=None, slo="100ms", disk=1 * MB)
    ups = [e for e in ev if e["event"] == "pace_decision" and e["action"] == "increase"]
    assert any(e["new_rate"] > e["old_rate"] for e in ups), ups
    assert all(e["new_cap"] == e["old_cap"] == 1 for e in ups), ups
    assert max(n for _, n in inflight) == 1


def _ladder_rung(tmp_path, length_s: float, ms_per_mbps: float) -> tuple[float, float]:
    """bench_pace_ladder's plan (4 partitions, RF 2, brokers 1, 2 -> 3, 4; Kafka's 11-window
    quota; 200 MB/s disks) sized so that static 32 MB/s takes ``length_s``, run with --pace
    adaptive up to 32 MB/s and --max-moves-per-broker 4 under p99 10 ms + ``ms_per_mbps`` per
    MB/s; its makespan and seconds over the 50 ms objective."""
    sim, plan = ladder_model.cluster(length_s)
    health = ladder_model.FlowLatency(sim, 10.0, ms_per_mbps)
    opts = ExecuteOptions(
        batch_size=4,
        additional=True,
        throttle=ladder_model.CEILING,
        pace="adaptive",
        slo_produce_p99="50ms",
        max_moves_per_broker=4,
        wait=True,
    )
    run = Run(
        sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep, health=health
    )
    assert run.run().state == "done"
    return sim.now(), health.over_s


def test_caps_on_moves_keep_a_tight_objective_as_the_rate_alone_does(tmp_path):
    """bench_pace_ladder's tight load (p99 10 ms + 1.5 ms per MB/s: 26 MB/s is the 50 ms
    objective, the ceiling 32 MB/s too fast) on its 30-s rung, with --max-moves-per-broker 4:
    no second over the objective, as fast as the fastest static rate that keeps it (16 MB/s:
    62 s). A cap that grew only at the ceiling kept every move through broker 1 one at a time
    (80 s, 35 s over); from one with broker 2 (the first move only removes it) counted as
    loaded, its reading of no load raised its rate x1.9 and it read 58 ms once it led the
    next move (62 s, 49 s over)."""
    makespan, over = _ladder_rung(tmp_path, 30.0, 1.5)
    assert over <= 2.0, over
    assert makespan <= 1.15 * 62.0, makespan


def test_caps_on_moves_pay_little_toll_where_nothing_objects(tmp_path):
    """The ladder's 60-s rung with headroom (p99 10 ms + 0.15 ms per MB/s: nothing objects at
    any rate): adaptive with --max-moves-per-broker 4 within 1.15x of static 32 MB/s (62 s),
    nothing over. Every move goes through all four brokers, so a cap of one is one move in the
    cluster until the first raise that the bytes allow (the first window that saw the load:
    5 s); a cap that grew only at the ceiling, by one, took 73 s."""
    makespan, over = _ladder_rung(tmp_path, 60.0, 0.15)
    assert over == 0.0, over
    assert makespan <= 1.15 * 62.0, makespan


def test_caps_on_moves_keep_the_tight_objective_on_the_shortest_rung(tmp_path):
    """The ladder's 15-s rung under tight load, with --max-moves-per-broker 4: at most 2 s over
    the objective, within 1.15x of the fastest static rate that keeps it (16 MB/s: 31 s). A
    cap that rose only on a second reading of the bytes (6 s in) grew to two, so each leader's
    second move started after its first ended, into the quota's credit of the second between
    them (42.9 MB/s for a second at a rate of 21.5: 74 ms), 10 s over in all."""
    makespan, over = _ladder_rung(tmp_path, 15.0, 1.5)
    assert over <= 2.0, over
    assert makespan <= 1.15 * 31.0, makespan


def test_caps_on_moves_pay_little_toll_on_a_short_rung(tmp_path):
    """The ladder's 30-s rung with headroom: within 1.15x of static 32 MB/s (31 s). The caps
    rise a poll after the first move, on its bytes read against its submission, where they
    waited for a second reading (6 s of one move in the cluster: 37 s, 1.19x)."""
    makespan, over = _ladder_rung(tmp_path, 30.0, 0.15)
    assert over == 0.0, over
    assert makespan <= 1.15 * 31.0, makespan
