"""Whether the moves through a broker copy at the rate they were given: the adaptive pace's
evidence for more moves at once (``Controller.step``'s ``bound``). Pure: the run hands in the
bytes its own progress samples already read (``MoveState.bytes_copied``, one DescribeLogDirs
per ``--sample-interval``), no broker call of its own.

A move's copy is bound by a rate when one of its ends moved at least ``RATE_BOUND`` of the rate
written to it (and none past ``OVER_BOUND`` of its own: then the quota's credit or the page
cache moved it, not the rate) over the last interval between two readings: its leader (which
every new replica fetches from: the bytes of all its moves in flight) or a new replica (its
share of each move). Then another move through its brokers adds bytes where the rate allows
them. A copy bound by something else — the disks, the network — moves well short of every rate
it has, and more moves at once only share what it already moves while each puts its bytes on
the same disks, where producers feel them (bench/RESULTS.md, bench-pacing and the pace ladder)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..model import TopicPartition

# of the rate written: the bytes moved at or above it are the rate's (the quota's average over
# its windows lets a second run faster, another slower: one interval between progress samples,
# 5 s, reads the rate within a fifth either way)
RATE_BOUND = 0.8
# and at most this much of it: more is the quota's credit (an end idle over its 11 windows may
# take seconds of allowance at once) or the page cache, not the rate binding (figures:
# bench/RESULTS.md, "Figures behind comments in the code")
OVER_BOUND = 1 / RATE_BOUND


@dataclass(frozen=True)
class Copying:
    """One move's step in flight as the progress samples see it: its partition, the broker its
    new replicas fetch from (``leader``: None when not known), the new replicas, every broker
    it goes through, the bytes its new replicas hold (None: not read yet), all they will
    (``total``) and when the step was submitted (``since``: its bytes then were none)."""

    tp: TopicPartition
    leader: int | None
    adding: tuple[int, ...]
    brokers: tuple[int, ...]
    copied: int | None
    total: int = 0
    since: float | None = None


@dataclass
class CopyRates:
    """The bytes the moves moved between two progress readings, per broker, and the brokers
    whose moves copy at their rate (``bound``). ``read`` at every poll; a new reading is one
    whose time (the run's last progress sample) changed. A move in both readings counts its
    difference over the interval, one submitted since the last (or before the first) its
    bytes over its time since its submission, one of the last reading now done (``done``)
    what it still had to copy over the interval; one that began and ended between two
    readings is not seen (a cap held, never one raised by it)."""

    bound: frozenset[int] = frozenset()
    flows: dict[int, float] = field(default_factory=dict)  # broker -> bytes/s, last interval
    _last: tuple[float, dict[TopicPartition, Copying], dict[int, int]] | None = None

    def read(
        self,
        moves: Iterable[Copying],
        read_at: float,
        rates: Mapping[int, int],
        done: Callable[[TopicPartition], bool] = lambda tp: False,
    ) -> frozenset[int]:
        """The brokers of the moves bound by a rate over the last interval (kept until the
        next reading). ``read_at``: when the bytes were read; ``rates``: the rates written
        now (those of the next interval); ``done``: whether a move of the last reading ended
        at its target since."""
        moves = list(moves)
        if not moves:  # nothing in flight: the evidence was of moves gone, none for the next
            self.bound = frozenset()
            return self.bound
        now = {m.tp: m for m in moves if m.copied is not None}
        if not now or (self._last is not None and read_at <= self._last[0]):
            return self.bound  # no new reading: the last evidence holds
        # the first reading is read against the moves' submissions (their bytes then none):
        # the run's first progress sample comes a poll after its first moves, the second an
        # interval later, and a cap that waited for it held one move for that long
        last, self._last = self._last, (read_at, now, dict(rates))
        t0, before, given = last if last is not None else (-math.inf, {}, dict(rates))
        moved: list[tuple[Copying, float]] = []  # a move and the bytes per second it moved
        for m in now.values():
            if m.tp in before:
                n = max(0, int(m.copied or 0) - int(before[m.tp].copied or 0))
                moved.append((m, n / (read_at - t0)))
            elif m.since is not None and t0 <= m.since < read_at:
                # from none at its submission, over its own time: a move submitted a second
                # before the reading read over the whole interval looked a fifth of its rate
                moved.append((m, int(m.copied or 0) / (read_at - m.since)))
        for tp, m in before.items():
            if tp not in now and done(tp):
                moved.append((m, max(0, m.total - int(m.copied or 0)) / (read_at - t0)))
        flows: dict[int, float] = {}
        for m, f in moved:
            if m.leader is not None:
                flows[m.leader] = flows.get(m.leader, 0.0) + f
            for b in m.adding:
                flows[b] = flows.get(b, 0.0) + f / max(1, len(m.adding))
        share = {b: f / given[b] for b, f in flows.items() if given.get(b)}
        at_rate = {b for b, x in share.items() if x >= RATE_BOUND}
        past = {b for b, x in share.items() if x > OVER_BOUND}  # its other ends' too
        self.flows = flows
        self.bound = frozenset(
            b
            for m, _ in moved
            if (ends := {*m.adding, *((m.leader,) if m.leader is not None else ())}) & at_rate
            and not ends & past
            for b in m.brokers
        )
        return self.bound
