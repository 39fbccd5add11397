"""The what-if reads how long each broker keeps a moved-out replica's files from the broker
itself (DescribeConfigs ``log.segment.delete.delay.ms``, real Kafka): the default as the
broker reports it, and a broker's own dynamic value once set (restored in ``finally``)."""

from __future__ import annotations

import time

from reassign_kit.api import connected
from reassign_kit.cluster.simulate_disks import DELETE_DELAY_KEY
from reassign_kit.whatif import delete_delays


def test_each_brokers_delete_delay_is_read_from_it(bootstrap):
    with connected(bootstrap) as gw:
        ids = sorted(b.id for b in gw.brokers())
        delays, notes = delete_delays(gw, ids)
        assert delays == dict.fromkeys(ids, 60.0) and notes == ()
        try:
            gw.alter_broker_configs({ids[0]: {DELETE_DELAY_KEY: "5000"}})
            delays, notes = settled(gw, ids, 5.0)
            assert delays[ids[0]] == 5.0 and notes == ()
            assert all(delays[b] == 60.0 for b in ids[1:])
        finally:
            gw.alter_broker_configs({ids[0]: {DELETE_DELAY_KEY: None}})
        assert settled(gw, ids, 60.0)[0][ids[0]] == 60.0


def settled(gw, ids: list[int], want: float) -> tuple[dict[int, float], tuple]:
    """The delays once broker ``ids[0]`` applied its change (the metadata log reaches it
    asynchronously), read again for at most 30 s."""
    end = time.monotonic() + 30
    while True:
        got = delete_delays(gw, ids)
        if got[0].get(ids[0]) == want or time.monotonic() > end:
            return got
        time.sleep(0.5)
