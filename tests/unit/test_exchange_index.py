"""The exchanges' candidate index (per broker, the replicas not yet moved) gives the same plans
as the scan of every candidate it replaced, on random small clusters."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.planner import exchange, replica_chunk
from reassign_kit.planner.in_process import plan_in_process
from reassign_kit.planner.params import PlanParams
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot


class ScanExchanges(exchange.Exchanges):
    """The exchanges as they were: every candidate of the broker scanned from the cheapest."""

    made = 0

    def _cheaper(self, b: int, d: int, than: int, skip: int) -> Iterator[tuple[int, int]]:
        tried = 0
        for s, j, pj in self.cands.get(b, ()):
            if s >= than or tried >= exchange.SCAN:
                return
            reps = self.new[j]
            if j == skip or (j, pj) in self.moved or reps[pj] != b or d in reps:
                continue
            tried += 1
            if self.rack_ok(reps, pj, d):
                yield j, pj

    def run(self, departures):
        made = super().run(departures)
        ScanExchanges.made += len(made)
        return made


def _snapshot(seed: int, brokers: int, racks: int, parts: int) -> Snapshot:
    """Skewed replica counts (low broker ids crowded) and sizes over 4 orders of magnitude."""
    rnd = random.Random(seed)
    bs = [BrokerEntry(b, f"r{b % racks}" if racks else None) for b in range(1, brokers + 1)]
    weights = [1 + 3 * (b <= brokers // 2) for b in range(1, brokers + 1)]
    entries = []
    for i in range(parts):
        rf = rnd.choice((1, 2, 3, 3))
        reps: list[int] = []
        while len(reps) < rf:
            b = rnd.choices(range(1, brokers + 1), weights)[0]
            if b not in reps:
                reps.append(b)
        size = rnd.choice((1, 10, 100, 1000)) * rnd.randint(1, 9)
        entries.append(PartitionEntry(f"t{i % 5}", i, tuple(reps), size))
    return Snapshot.of(bs, [TopicEntry(f"t{k}", 1) for k in range(5)], entries)


def _plans(snap: Snapshot, params: PlanParams, monkeypatch) -> tuple[str, str]:
    indexed = plan_in_process(snap, params).plan.digest()
    with monkeypatch.context() as m:
        m.setattr(replica_chunk, "Exchanges", ScanExchanges)
        scanned = plan_in_process(snap, params).plan.digest()
    return indexed, scanned


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    brokers=st.integers(4, 9),
    racks=st.sampled_from((0, 2, 3)),
    parts=st.integers(20, 160),
    scan=st.integers(1, 16),
    remove=st.booleans(),
)
def test_the_index_gives_the_plan_of_the_scan(seed, brokers, racks, parts, scan, remove):
    snap = _snapshot(seed, brokers, racks, parts)
    params = PlanParams(remove_brokers=(brokers,) if remove else (), chunks=2)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(exchange, "SCAN", scan)  # a low bound: the scan stops early in both
        indexed, scanned = _plans(snap, params, m)
    assert indexed == scanned


def test_the_random_clusters_make_exchanges(monkeypatch):
    """The property above compares plans with exchanges in them, not only plans without."""
    ScanExchanges.made = 0
    monkeypatch.setattr(exchange, "SCAN", 2)
    for seed in range(6):
        snap = _snapshot(seed, 6, 3, 120)
        indexed, scanned = _plans(snap, PlanParams(chunks=2), monkeypatch)
        assert indexed == scanned
    assert ScanExchanges.made > 0
