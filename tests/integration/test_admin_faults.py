"""The admin gateway after a broker dies (found by the chaos suite).

kafka-python sends controller requests (List/AlterPartitionReassignments) to one broker it
picked once; when that broker died, every later request failed with UnknownBrokerIdError,
even after the broker came back, so a paced run could not poll for minutes. The gateway now
starts a new client after a failed call: the next one goes to a live broker."""

from __future__ import annotations

import time

import pytest

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.errors import KafkaOperationError

pytestmark = pytest.mark.integration


def test_list_reassignments_recovers_after_its_broker_dies(sandbox, bootstrap):
    gw = AdminGateway(bootstrap, timeout_s=10)
    try:
        gw.list_reassignments()
        victim = gw.kp._controller_id  # the broker kafka-python sends controller requests to
        assert victim in sandbox.nodes, victim
        sandbox.kill_broker(victim)
        try:
            answers, errors = 0, []
            deadline = time.monotonic() + 60
            while answers < 2 and time.monotonic() < deadline:  # a bounded retry, as the run's
                try:
                    gw.list_reassignments()
                    answers += 1
                except KafkaOperationError as e:
                    errors.append(str(e))
                    time.sleep(1)
            assert answers == 2, f"no answer while broker {victim} is down: {errors[-3:]}"
        finally:
            sandbox.start_broker(victim)
        gw.list_reassignments()
    finally:
        gw.close()
