"""A move that completes while it is being cancelled, on the real cluster.

Kafka answers the cancel of a reassignment that has just finished with its own error
(``NoReassignmentInProgress``), which the simulator spells differently; the run must report
such a move as completed, not as a failed cancel. The race is made deterministic: the cancel
request is held back until the real cluster shows the partition at its target, then sent."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from waits import wait_until

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

pytestmark = pytest.mark.integration


class CancelAfterCompletion:
    """The real gateway, except that a cancel (a target of None) waits until the partition
    is at the plan's target on the cluster before it is sent."""

    def __init__(self, gw: AdminGateway, targets: dict[TopicPartition, tuple[int, ...]]):
        self._gw, self._targets = gw, targets
        self.cancels_sent = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gw, name)

    def alter_reassignments(
        self, targets: dict[TopicPartition, Any], **kw: Any
    ) -> dict[TopicPartition, Any]:
        cancels = [tp for tp, t in targets.items() if t is None]
        for tp in cancels:
            wait_until(
                lambda tp=tp: (
                    tuple(self._gw.describe_partitions([tp])[tp].replicas) == self._targets[tp]
                    and not self._gw.list_reassignments([tp])
                ),
                60,
                f"{tp} at its target before the cancel is sent",
            )
        self.cancels_sent += len(cancels)
        return self._gw.alter_reassignments(targets, **kw)


def test_a_move_completing_while_cancelled_is_completed_on_the_sandbox(
    sandbox, bootstrap, topic_name, tmp_path
):
    topic = topic_name("race")
    sandbox.create_topic(topic, assignment=[[1, 2]])
    tp = TopicPartition(topic, 0)
    target = (3, 4)
    gw = AdminGateway(bootstrap)
    racing = CancelAfterCompletion(gw, {tp: target})
    journal = str(tmp_path / "journal.jsonl")
    try:
        # the broker the gateway asks may learn of the new topic a moment after the one the
        # sandbox asked (a fresh-clone CI run under load: "unknown partition(s), nothing was
        # sent")
        wait_until(lambda: tp in gw.describe_partitions([tp]), 30, f"{tp} in the metadata")
        # a poll interval far longer than the move: the run only learns of the completion
        # from the cancel's answer
        opts = ExecuteOptions(batch_size=1, wait=True, poll_interval_ms=600_000, additional=True)
        run = Run(racing, Plan.of([Move(tp, target)]), opts, journal)
        submitted = threading.Event()
        run.subscribe(lambda ev: ev.get("event") == "submitted" and submitted.set())
        run.start()
        assert submitted.wait(60), f"the move was never submitted: {read_events(journal)}"
        run.stop(cancel_inflight=True)
        result = run.wait(120)
    finally:
        gw.close()
    assert racing.cancels_sent == 1, "the run never sent the cancel the race needs"
    evs = [e for e in read_events(journal) if e.get("run_id") == result.run_id]
    names = [e["event"] for e in evs]
    assert "completed" in names and "cancelled" not in names, names
    assert not [e for e in evs if e["event"] == "error"], [e for e in evs if e["event"] == "error"]
    assert result.completed == [tp] and not result.cancelled and not result.failed, result
    # and the cluster agrees
    check = AdminGateway(bootstrap)
    try:
        assert tuple(check.describe_partitions([tp])[tp].replicas) == target
    finally:
        check.close()
