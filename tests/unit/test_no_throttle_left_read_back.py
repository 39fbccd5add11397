"""A paced run's "No throttle left by this run" comes from the brokers' and topics' throttle
configs read back after the cleanup, never from what the run believes it removed: a broker
that keeps a rate it acknowledged removing is named (exit 8), and so is a broker that cannot be
read back — the run then never says none is left."""

from __future__ import annotations

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.operations import execute as ops
from reassign_kit.run import finish

KEEPER = 3  # the broker that acknowledges the rate's removal but keeps it
OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}


class KeepsItsRate(SimCluster):
    """A broker that acknowledges the removal of its throttle rate and keeps it (a dynamic
    config change lost, as across a controller failover)."""

    def alter_broker_configs(self, changes):
        kept = {
            b: {k: v for k, v in kv.items() if not (b == KEEPER and v is None)}
            for b, kv in changes.items()
        }
        return super().alter_broker_configs(kept)


class LagsItsRate(SimCluster):
    """A broker that applies the removal of its throttle rate two seconds after it is
    acknowledged (a KRaft broker applies a config record once it reaches it)."""

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.held: list[tuple[float, dict]] = []

    def alter_broker_configs(self, changes):
        now = {
            b: {k: v for k, v in kv.items() if not (b == KEEPER and v is None)}
            for b, kv in changes.items()
        }
        later = {k: None for k, v in changes.get(KEEPER, {}).items() if v is None}
        if later:
            self.held.append((self.t + 2.0, {KEEPER: later}))
        return super().alter_broker_configs(now)

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        due = [c for at, c in self.held if at <= self.t]
        self.held = [(at, c) for at, c in self.held if at > self.t]
        for c in due:
            super().alter_broker_configs(c)


def _die_after_the_cleanup(monkeypatch, sim: SimCluster) -> None:
    """Broker 3 goes down right after the run's throttle cleanup, before the read back."""
    real = finish.current_throttles

    def read(gateway, topics, brokers):
        sim.down.add(KEEPER)
        return real(gateway, topics, brokers)

    monkeypatch.setattr(finish, "current_throttles", read)


def _run(monkeypatch, tmp_path, capsys, sim: SimCluster) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 2 * MB)
    sim.alter_broker_configs({0: dict(OPERATOR)})  # the operator's, put back, not "left"
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    ).write("plan.json")
    code = cli_main(
        ["--bootstrap-server", "sim:1", "--execute", "--reassignment-json-file", "plan.json"]
        + ["--reassignment-batch-size", "4", "--throttle", "20000000", "--wait"]
        + ["--state-dir", "state"]
    )
    out, err = capsys.readouterr()
    return code, out + err


def test_a_clean_run_says_none_left_from_the_read_back(monkeypatch, tmp_path, capsys):
    sim = SimCluster(4, bandwidth=50 * MB)
    code, out = _run(monkeypatch, tmp_path, capsys, sim)
    assert code == 0, out[-2000:]
    assert "No throttle left by this run (read back" in out
    assert sim.broker_configs([0])[0].get(LEADER_RATE) == "7777777"


def test_a_rate_the_broker_kept_is_named_never_none_left(monkeypatch, tmp_path, capsys):
    sim = KeepsItsRate(4, bandwidth=50 * MB)
    code, out = _run(monkeypatch, tmp_path, capsys, sim)
    assert "No throttle left" not in out, out[-2000:]
    assert "still set: a rate on broker 3" in out and code == 8, (code, out[-2000:])
    assert sim.broker_cfg[KEEPER].get(FOLLOWER_RATE) == "20000000"  # indeed there


def test_a_broker_that_cannot_be_read_back_is_named_never_none_left(monkeypatch, tmp_path, capsys):
    sim = SimCluster(4, bandwidth=50 * MB)
    _die_after_the_cleanup(monkeypatch, sim)
    code, out = _run(monkeypatch, tmp_path, capsys, sim)
    assert "No throttle left" not in out, out[-2000:]
    assert "broker(s) 3 could not be read back" in out and code == 8, (code, out[-2000:])


def test_a_rate_removed_late_by_its_broker_is_waited_for_not_reported_left(
    monkeypatch, tmp_path, capsys
):
    sim = LagsItsRate(4, bandwidth=50 * MB)
    code, out = _run(monkeypatch, tmp_path, capsys, sim)
    assert code == 0, out[-2000:]
    assert "No throttle left by this run (read back" in out
    assert not sim.broker_cfg.get(KEEPER, {}).get(FOLLOWER_RATE)
    assert not sim.held
