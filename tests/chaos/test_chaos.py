"""Chaos on a real KRaft quorum: each scenario moves a loaded topic with a paced
run while a fault hits the cluster or the tool, then checks that no acknowledged message was
lost, no throttle is left that no move needs, an operator's throttles are back, every
partition is at its plan target (or its original list when cancelled) and no replication
factor changed. ``make chaos`` runs every scenario and prints the table
(tests/out/chaos/table.txt); ``make test`` runs the quick ones (not marked ``chaos``)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from harness import MB, Ctx, Row, _events, run_scenario, start_cli

from reassign_kit.cluster.admin import AdminGateway

pytestmark = pytest.mark.integration
OUT = Path(__file__).resolve().parents[1] / "out" / "chaos"
# an objective this shared machine holds while moves run: the decisions are the pace's own
ADAPTIVE = ("--pace", "adaptive", "--slo-produce-p99", "2500ms", "--throttle-floor", str(MB // 4))


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    """4 brokers and a quorum of 3 controllers, for this module alone. In ZooKeeper mode
    (`make compat`'s 3.x columns) there is no quorum: the controller is one of the brokers,
    and a controller fault is that broker's failover."""
    from reassign_kit.sandbox.kafka import default_metadata
    from reassign_kit.sandbox.sandbox import Sandbox

    n = 1 if default_metadata() == "zookeeper" else 3
    with Sandbox.start(brokers=4, controllers=n, dir=tmp_path_factory.mktemp("quorum")) as sb:
        yield sb


@pytest.fixture
def work(request) -> Path:
    """The scenario's folder under tests/out/chaos (plan, journal, CLI output, row), kept
    after the run for a person to read (pytest's tmp folders are pruned)."""
    import shutil

    d = OUT / request.node.name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def record(row: Row) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    table = OUT / "table.txt"
    if not table.exists():
        table.write_text(Row.HEAD + "\n")
    with open(table, "a") as f:
        f.write(row.line() + "\n")
    print("\n" + Row.HEAD + "\n" + row.line())


def check(row: Row) -> None:
    record(row)
    assert row.ok(), row


# ---------------------------------------------------------------- faults


def kill_and_restart(broker: int, down_s: float = 10):
    def fault(ctx: Ctx) -> None:
        ctx.wait_event("submitted")
        ctx.sb.kill_broker(broker)
        try:
            time.sleep(down_s)
        finally:
            ctx.sb.start_broker(broker)

    return fault


def kill_active_controller(ctx: Ctx) -> None:
    ctx.wait_event("submitted")
    active = ctx.sb.active_controller()
    assert active is not None, "no active controller to kill"
    ctx.sb.kill_node(active)
    try:
        time.sleep(5)
        new = None
        deadline = time.monotonic() + 30
        while new is None and time.monotonic() < deadline:
            new = ctx.sb.active_controller()
            time.sleep(0.5)
        ctx.notes.append(f"controller {active} killed; {new} took over")
        assert new is not None and new != active, "no failover happened"
    finally:
        ctx.sb.start_node(active)


def quorum_lost_40s(ctx: Ctx) -> None:
    """Two of three controllers down for 40 s (longer than a request timeout): no
    controller at all, as with a single controller down."""
    ctx.wait_event("submitted")
    active = ctx.sb.active_controller()
    down = [active, *[c for c in ctx.sb.controllers if c != active][:1]]
    for c in down:
        ctx.sb.kill_node(c)
    try:
        time.sleep(40)
    finally:
        for c in down:
            ctx.sb.start_node(c)


def sigkill_tool_then_resume(ctx: Ctx) -> None:
    ctx.wait_event("submitted", 2)
    assert ctx.proc is not None
    ctx.proc.send_signal(signal.SIGKILL)
    ctx.proc.wait(30)
    ctx.person_acted = "resume"
    ctx.proc = start_cli(ctx.sb, *ctx.args, "--resume", log=ctx.work / "cli-resume.log")


def broker_and_tool_sigkilled_then_resumed(ctx: Ctx) -> None:
    """A target broker SIGKILLed mid-move, then the tool SIGKILLed (a real
    subprocess SIGKILL) while the broker is down; the broker restarted, the run resumed."""
    ctx.wait_event("submitted", 2)
    ctx.sb.kill_broker(3)
    try:
        time.sleep(5)
        assert ctx.proc is not None
        ctx.proc.send_signal(signal.SIGKILL)
        ctx.proc.wait(30)
        time.sleep(5)
    finally:
        ctx.sb.start_broker(3)
    ctx.person_acted = "resume"
    ctx.proc = start_cli(ctx.sb, *ctx.args, "--resume", log=ctx.work / "cli-resume.log")


def sigterm_after_first_step(ctx: Ctx) -> None:
    ctx.wait_event("step_completed")
    assert ctx.proc is not None
    ctx.proc.send_signal(signal.SIGTERM)


# ---------------------------------------------------------------- quick subset (make test)


def test_target_broker_sigkilled_mid_move_and_restarted(quorum, work):
    check(run_scenario(quorum, "target broker killed", work, kill_and_restart(3)))


def test_active_controller_sigkilled_and_restarted(quorum, work):
    check(run_scenario(quorum, "active controller killed", work, kill_active_controller))


# ---------------------------------------------------------------- the full table (make chaos)


@pytest.mark.chaos
def test_source_broker_sigkilled_mid_move_and_restarted(quorum, work):
    check(run_scenario(quorum, "source broker killed", work, kill_and_restart(1)))


@pytest.mark.chaos
def test_no_controller_for_40s(quorum, work):
    check(run_scenario(quorum, "no controller 40 s", work, quorum_lost_40s))


@pytest.mark.chaos
def test_tool_sigkilled_and_resumed(quorum, work):
    check(run_scenario(quorum, "tool SIGKILLed, resumed", work, sigkill_tool_then_resume))


@pytest.mark.chaos
def test_broker_and_tool_sigkilled_then_resumed(quorum, work):
    row = run_scenario(
        quorum, "broker and tool killed, resumed", work, broker_and_tool_sigkilled_then_resumed
    )
    check(row)


@pytest.mark.chaos
def test_stepped_run_cancelled_mid_way_rolls_back(quorum, work):
    row = run_scenario(
        quorum,
        "stepped run cancelled",
        work,
        sigterm_after_first_step,
        extra=["--parallel-replica-count", "1", "--on-interrupt", "cancel"],
        expect="cancelled",
    )
    check(row)


@pytest.mark.chaos
def test_a_stopped_broker_in_the_current_replicas(quorum, work):
    row = run_scenario(
        quorum,
        "stopped source broker",
        work,
        lambda ctx: None,
        before=lambda ctx: ctx.sb.stop_broker(1),
        after=lambda ctx: ctx.sb.start_broker(1),
    )
    check(row)


@pytest.mark.chaos
def test_operator_throttles_present_before_the_run(quorum, work):
    rate = {"leader.replication.throttled.rate": "7777777",
            "follower.replication.throttled.rate": "7777777"}  # fmt: skip
    operator = {"brokers": {2: dict(rate), 3: dict(rate)}}

    def set_operator(ctx: Ctx) -> None:
        gw = AdminGateway(ctx.sb.bootstrap_servers)
        try:
            gw.alter_broker_configs({2: dict(rate), 3: dict(rate)})
        finally:
            gw.close()

    try:
        row = run_scenario(
            quorum,
            "operator throttles",
            work,
            lambda ctx: None,
            before=set_operator,
            operator=operator,
        )
    finally:
        gw = AdminGateway(quorum.bootstrap_servers)
        try:
            gw.alter_broker_configs({b: dict.fromkeys(rate) for b in (2, 3)})
        finally:
            gw.close()
    check(row)


@pytest.mark.chaos
def test_journal_file_system_full(quorum, work):
    """The journal on an 8 KiB tmpfs: the run stops submitting when a write fails, and leaves
    the cluster as a cancel would not need to: moves in flight finish (or are cancelled),
    nothing else is sent, no throttle is left."""
    import subprocess

    mnt = work / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mnt)], check=True)
    try:
        row = run_scenario(
            quorum,
            "journal disk full",
            work / "work",
            lambda ctx: None,
            journal=mnt / "journal.jsonl",
            partitions=8,
            mb=1,
            throttle=4 * MB,
            expect="either",
        )
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    check(row)


def sigstop_bursts(broker: int, bursts: int = 6, stop_s: float = 4.0, cont_s: float = 1.0):
    """A broker stalled in bursts (SIGSTOP / SIGCONT: a stand-in for long GC pauses), a
    bounded count, SIGCONT always sent last; the time of the first stop noted."""
    import os

    def fault(ctx: Ctx) -> None:
        ctx.wait_event("submitted")
        ctx.wait_event("pace_sample", 2)  # the probe measures every broker by now
        pid = ctx.sb.node(broker).pid
        assert pid, f"broker {broker} has no pid"
        (ctx.work / "stalled_at").write_text(repr(time.time()))
        try:
            for _ in range(bursts):
                os.kill(pid, signal.SIGSTOP)
                time.sleep(stop_s)
                os.kill(pid, signal.SIGCONT)
                time.sleep(cont_s)
        finally:
            os.kill(pid, signal.SIGCONT)
        ctx.notes.append(f"broker {broker} stalled {bursts} x {stop_s:g} s")

    return fault


@pytest.mark.chaos
@pytest.mark.parametrize("caps", [(), ("--max-moves-per-broker", "4")], ids=["rate", "caps"])
def test_a_stalled_broker_is_backed_off_alone(quorum, work, caps):
    """--pace adaptive with broker 3 (a target of every move) stalled by SIGSTOP
    bursts: its rate drops within 30 s of the first stall and the other brokers' do not (each
    stands as high or higher 30 s later, above broker 3), nothing acknowledged is lost, the run
    finishes with no throttle left. With caps on moves too: a breach cuts the rate first."""
    from reassign_kit.moves.journal import read_events

    fault = sigstop_bursts(3)
    row = run_scenario(
        quorum,
        "stalled broker, adaptive pace",
        work,
        fault,
        mb=8,
        throttle=4 * MB,
        extra=ADAPTIVE + caps,
    )
    check(row)
    ev = read_events(work / "journal.jsonl")
    decisions = [e for e in ev if e["event"] == "pace_decision" and e.get("broker") is not None]
    stop_ts = float((work / "stalled_at").read_text())  # the fault ran (else: no such file)
    start = [e for e in ev if e["event"] == "pace_started"][0]["start_rate"]

    def rate_at(b: int, t: float) -> int:
        return ([start] + [e["new_rate"] for e in decisions if e["broker"] == b and e["ts"] <= t])[
            -1
        ]

    end = stop_ts + 30
    mine = [e for e in decisions if e["broker"] == 3 and stop_ts <= e["ts"] <= end]
    assert mine and mine[0]["action"] == "decrease", f"broker 3 not backed off within 30 s: {mine}"
    assert rate_at(3, end) < rate_at(3, stop_ts)  # its rate dropped ...
    for b in (1, 2, 4):  # ... the others' did not, over the same 30 s (this shared machine's
        # noise may halve them for a moment too: what counts is where each stands after)
        assert rate_at(b, end) >= rate_at(b, stop_ts), (b, rate_at(b, stop_ts), rate_at(b, end))
        assert rate_at(b, end) > rate_at(3, end)


def sigkill_adaptive_then_resume(ctx: Ctx) -> None:
    """The adaptive run SIGKILLed once its pace raised a broker, then resumed."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ev = _events(ctx.journal) if ctx.journal.exists() else []
        if any(e.get("event") == "pace_decision" and e.get("action") == "increase" for e in ev):
            break
        if ctx.proc is not None and ctx.proc.poll() is not None:
            raise AssertionError("the run ended before its pace raised a broker")
        time.sleep(0.2)
    else:
        raise AssertionError("the pace raised no broker within 120 s")
    assert ctx.proc is not None
    ctx.proc.send_signal(signal.SIGKILL)
    ctx.proc.wait(30)
    (ctx.work / "killed_after").write_text(str(len(_events(ctx.journal))))
    ctx.person_acted = "resume"
    ctx.proc = start_cli(ctx.sb, *ctx.args, "--resume", log=ctx.work / "cli-resume.log")


@pytest.mark.chaos
def test_adaptive_run_sigkilled_and_resumed_keeps_its_pace(quorum, work):
    """An adaptive run SIGKILLed (a real subprocess SIGKILL) after its pace raised
    a broker, then resumed: the resumed run takes over each broker's rate and the rate
    written to it (the throttles it sets for the moves in flight go on from those toward the
    rates, never the ceiling nor the floor), nothing acknowledged is lost, the run finishes
    with no throttle left."""
    from reassign_kit.pacing.memory import orphan_canaries, pace_memory

    row = run_scenario(
        quorum,
        "adaptive pace SIGKILLed, resumed",
        work,
        sigkill_adaptive_then_resume,
        mb=40,  # ~40 s at the start rate (4 MiB/s): the pace raises a broker before the end
        throttle=8 * MB,
        extra=ADAPTIVE,
    )
    check(row)
    ev = _events(work / "journal.jsonl")
    cut = int((work / "killed_after").read_text())
    mem = pace_memory(ev[:cut])
    assert mem is not None and mem.rates, ev[:cut]
    after = ev[cut:]
    first_decision = min(
        (e["ts"] for e in after if e.get("event") == "pace_decision" and e.get("broker")),
        default=float("inf"),
    )
    for e in after:
        if e.get("event") == "throttle_set" and e["ts"] < first_decision:
            for b, rate in (e.get("broker_rates") or {}).items():
                # the ramp toward the raise goes on from where it was: neither the ceiling
                # (8 MiB/s) nor the floor
                assert mem.written[int(b)] <= int(rate) <= mem.rates[int(b)], (b, rate, mem)
    # the killed run's canary topic: deleted by the resume (it journaled its name first)
    killed = [e["canary"] for e in ev[:cut] if e.get("event") == "probe_canary"]
    assert killed and orphan_canaries(ev[:cut]) == killed, ev[:cut]
    assert any(
        e.get("event") == "probe_canary_deleted" and e["canary"] == killed[-1] and e["orphan"]
        for e in after
    ), after
    assert orphan_canaries(ev) == []  # and the resumed run's own, at its end
    started = next(e for e in after if e.get("event") == "pace_started")
    took = started["resumed_from"]
    assert {int(b): r for b, r in took["rates"].items()} == mem.rates
    assert {int(b): r for b, r in took["written"].items()} == mem.written
