"""A target broker that dies mid-run and stays dead, on the simulator: its moves are stuck
with that reason within --stuck-after (journal, live view, panel, notification), and a stop or
a cancel then ends within a bounded simulated time, saying what a cancel could not undo."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from reassign_kit.cli.live import LiveState
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import KafkaOperationError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.outputs.notify import Notifier
from reassign_kit.run.finish import CLEANUP_RETRY_S
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.ui.status import status_of

TP = TopicPartition
DEAD = 3
STUCK_AFTER = 30.0
DOWN = re.compile(rf"target broker {DEAD} is down since \d\d:\d\d:\d\d")


class _Answering(SimCluster):
    """As a real cluster: DescribeLogDirs asking a broker that is down fails (the simulator
    leaves its replicas out)."""

    def describe_log_dirs(self, brokers, tps=None):
        dead = sorted(set(brokers) & self.down)
        if dead:
            raise KafkaOperationError(f"describe log dirs: broker {dead[0]} is down (timed out)")
        return super().describe_log_dirs(brokers, tps)


class _Posts(Notifier):
    """The notifier's words, kept instead of POSTed (the URL is never asked)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, dict]] = []

    def post(self, event: str, text: str, **fields) -> None:
        self.posts.append((event, text, fields))


def _run(tmp_path, then: str, cluster: type[SimCluster] = _Answering):
    """Two moves into broker 3 (throttled, slow); broker 3 dies once both copied some bytes and
    never returns. ``then``: what is done on the first ``stuck`` event ("stop", "cancel" or
    nothing). Returns (sim, result, journal events, when it died, when the run was asked to
    end, the live state, the notifier)."""
    sim = cluster(4, bandwidth=20 * MB)
    sim.add_topic("a", [[0, 1], [1, 0]], 40 * MB)
    plan = Plan.of([Move(TP("a", 0), (0, DEAD)), Move(TP("a", 1), (1, DEAD))])
    opts = ExecuteOptions(
        batch_size=2, wait=True, throttle=1 * MB, stuck_after=STUCK_AFTER, run_deadline=3600
    )
    journal = tmp_path / "run.jsonl"
    run = Run(sim, plan, opts, str(journal), clock=sim.now, sleep=sim.sleep)
    live, notes = LiveState(len(plan)), _Posts()
    marks: dict[str, float] = {}

    def on_event(e):
        live.on_event(e)
        notes.on_event(e)
        if e["event"] == "sample" and (e.get("bytes_copied") or 0) > 0 and "died" not in marks:
            sim.down.add(DEAD)
            marks["died"] = sim.now()
        if e["event"] == "stuck" and then and "asked" not in marks:
            marks["asked"] = sim.now()
            run.cancel() if then == "cancel" else run.stop()
        if sim.now() > 120:  # the test's own bound: a run that never ends fails here
            run.stop()

    run.subscribe(on_event)
    res = run.run()
    return sim, res, read_events(journal), marks, live, notes


@pytest.mark.parametrize("cluster", [_Answering, SimCluster])
def test_moves_into_a_dead_target_are_stuck_with_that_reason_within_stuck_after(tmp_path, cluster):
    """Before, a dead target's failed samples counted as 'waiting': never stuck."""
    sim, res, ev, marks, live, notes = _run(tmp_path, then="stop", cluster=cluster)
    stuck = [e for e in ev if e["event"] == "stuck"]
    assert {(e["topic"], e["partition"]) for e in stuck} == {("a", 0), ("a", 1)}
    for e in stuck:
        assert DOWN.search(e["reason"]), e
        assert e["ts"] - marks["died"] <= STUCK_AFTER + 5  # within stuck-after (+ one poll)
    # the live view, the panel and the notification say it in the same words
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(live.render())
    text = console.export_text()
    assert DOWN.search(text), text
    before_end = [e for e in ev if e["event"] != "run_finished"]
    panel = status_of("running", before_end, 80 * MB, 2, sim.now())
    assert DOWN.search(panel.line), panel.line
    stuck_posts = [t for k, t, _ in notes.posts if k == "stuck"]
    assert len(stuck_posts) == 2 and all(DOWN.search(t) for t in stuck_posts), notes.posts


def test_a_stop_after_a_target_died_ends_without_waiting_for_it(tmp_path):
    sim, res, ev, marks, _, _ = _run(tmp_path, then="stop")
    assert res.state == "stopped", res
    # before: the final cleanup asked the dead broker again for CLEANUP_RETRY_S
    assert sim.now() - marks["asked"] < CLEANUP_RETRY_S / 2, sim.now() - marks["asked"]
    assert res.cleanup_error is not None and f"broker(s) {DEAD}" in res.cleanup_error


def test_a_cancel_of_moves_into_a_dead_target_says_what_it_undid(tmp_path):
    sim, res, ev, marks, _, _ = _run(tmp_path, then="cancel")
    assert res.state == "cancelled", res
    assert sim.now() - marks["asked"] < CLEANUP_RETRY_S / 2, sim.now() - marks["asked"]
    assert sim.assignment() == {TP("a", 0): (0, 1), TP("a", 1): (1, 0)}
    assert {(e["topic"], e["partition"]) for e in ev if e["event"] == "cancelled"} == {
        ("a", 0),
        ("a", 1),
    }
    notes = [e["message"] for e in ev if e["event"] == "warning" and "down broker" in e["message"]]
    assert len(notes) == 2, notes
    for n in notes:
        assert f"into down broker(s) {DEAD}" in n and "(undone)" in n and "not undone" in n


def test_the_plain_printer_says_why_a_move_is_stuck(capsys):
    """Piped or CI output (no live view) names the reason beside the policy."""
    from reassign_kit.cli.paced import _printer

    show = _printer(None, progress_lines=False)
    reason = "target broker 4 is down since 12:00:00"
    show({"event": "stuck", "ts": 0.0, "topic": "t", "partition": 3, "policy": "report",
          "reason": reason})  # fmt: skip
    out = capsys.readouterr().out
    assert f"STUCK: t-3: {reason} (policy: report)" in out
