"""The network pass's lists as numbered arrays: brokers numbered once (the given ones first,
then as met), replica lists flattened (each replica's broker number, list after list), and the
per-broker sums over them — network in, network out, leader load, replica counts, bytes — and
each broker's lists in the order they come. Pure.

Each float sum is the one a walk list by list gives, to the last bit: ``numpy.bincount`` adds
its weights in the order given, from zero, as the walk does. Dicts come out keyed as the walk
would key them: the given brokers first, then the others in the order first met."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .network import RESOURCES

TABLE_MAX = 1 << 20  # broker ids below this are numbered through a look-up array


class Numbering(dict):
    """Broker id -> its number: a broker not yet numbered gets the next one as it is met."""

    def __missing__(self, broker: int) -> int:
        n = self[broker] = len(self)
        return n


@dataclass
class Flat:
    """Replica lists flattened: ``flat`` each replica's broker number, ``lens`` each list's
    length, ``ids`` each number's broker id (``given`` of them numbered before any list)."""

    ids: list[int]
    given: int
    flat: np.ndarray
    lens: np.ndarray

    @classmethod
    def of(cls, lists: Sequence[Sequence[int]], brokers: Iterable[int]) -> Flat:
        numbering = Numbering(zip(brokers, itertools.count()))
        given = len(numbering)
        lens = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        replicas = itertools.chain.from_iterable(lists)
        raw = np.fromiter(replicas, dtype=np.int64, count=int(lens.sum()))
        ids = list(numbering)
        every = np.concatenate((np.asarray(ids, dtype=np.int64), raw))
        top = int(every.max()) if len(every) else 0
        if len(every) and (every.min() < 0 or top >= TABLE_MAX):  # too far apart for a table
            flat = np.fromiter(map(numbering.__getitem__, raw.tolist()), np.int64, len(raw))
            return cls(list(numbering), given, flat, lens)
        table = np.full(top + 1, -1, dtype=np.int64)
        table[np.asarray(ids, dtype=np.int64)] = np.arange(given, dtype=np.int64)
        flat = table[raw]
        unknown = flat < 0
        if unknown.any():  # numbered as first met, after the given ones
            met = flat_order(raw[unknown])
            table[np.asarray(met, dtype=np.int64)] = np.arange(given, given + len(met))
            flat, ids = table[raw], ids + met
        return cls(ids, given, flat, lens)

    def owners(self) -> np.ndarray:
        """Each replica's list number."""
        return np.repeat(np.arange(len(self.lens), dtype=np.int64), self.lens)

    def starts(self) -> np.ndarray:
        """Where each list begins in ``flat``."""
        return np.cumsum(self.lens) - self.lens

    def heads(self, leaders: np.ndarray | None = None) -> np.ndarray:
        """Each list's leading broker number (-1: an empty list): the broker id ``leaders``
        names where the list holds it, else the first listed."""
        starts, has = self.starts(), self.lens > 0
        pos = np.where(has, starts, 0)
        if leaders is not None and len(self.flat):
            ids = np.asarray(self.ids, dtype=np.int64)[self.flat]
            owner = self.owners()
            match = np.flatnonzero(ids == leaders[owner])
            pos[owner[match]] = match
        out = self.flat[pos] if len(self.flat) else np.zeros(len(self.lens), dtype=np.int64)
        return np.where(has, out, -1)

    def met(self, nums: np.ndarray) -> list[int]:
        """The numbers past the given ones among ``nums``, in the order first met."""
        extra = nums[nums >= self.given]
        if not len(extra):
            return []
        got, first = np.unique(extra, return_index=True)
        return got[np.argsort(first, kind="stable")].tolist()

    def keyed(self, sums: np.ndarray, order: np.ndarray) -> dict[int, float]:
        """``sums`` (by number) as broker id -> value: the given brokers, then those ``order``
        meets."""
        ids, n = self.ids, self.given
        out = dict(zip(ids[:n], sums[:n].tolist(), strict=True))
        for num in self.met(order):
            out[ids[num]] = float(sums[num])
        return out

    def loads(
        self, produce: np.ndarray, fetch: np.ndarray, heads: np.ndarray | None = None
    ) -> dict[str, dict[int, float]]:
        """Per resource, per broker: its load (``planner.network.broker_loads``), list ``i``
        carrying ``(produce[i], fetch[i])`` and led by ``heads[i]`` (else its first)."""
        heads = self.heads() if heads is None else heads
        n = len(self.ids)
        nin = np.bincount(self.flat, weights=produce[self.owners()], minlength=n)
        led = heads >= 0
        h, p = heads[led], produce[led]
        # a walk adds the fetch, then the replication out: two additions, in that order
        out = np.empty(2 * len(h))
        out[0::2], out[1::2] = fetch[led], p * (self.lens[led] - 1)
        nout = np.bincount(np.repeat(h, 2), weights=out, minlength=n)
        lead = np.bincount(h, weights=p, minlength=n)
        orders = (self.flat, h, h)
        return {
            r: self.keyed(s, o)
            for r, s, o in zip(RESOURCES, (nin, nout, lead), orders, strict=True)
        }


def columns(
    pairs: Sequence[tuple[float, float]],
) -> tuple[np.ndarray, np.ndarray]:
    """``(produce, fetch)`` pairs as two arrays."""
    n = len(pairs)
    produce = np.fromiter(map(itemgetter(0), pairs), dtype=np.float64, count=n)
    fetch = np.fromiter(map(itemgetter(1), pairs), dtype=np.float64, count=n)
    return produce, fetch


def list_loads(
    lists: Sequence[Sequence[int]], pairs: Sequence[tuple[float, float]], brokers: Iterable[int]
) -> dict[str, dict[int, float]]:
    """``broker_loads(zip(lists, pairs), brokers)``, the same sums, in arrays."""
    return Flat.of(lists, brokers).loads(*columns(pairs))


def added(
    base: Mapping[int, int], flat: Flat, upto: int, weights: np.ndarray | None = None
) -> dict[int, int]:
    """``base`` plus, per broker, the replicas (or their ``weights``, by list) among the first
    ``upto`` of ``flat``'s replicas: keyed as a walk adding them one by one keys it."""
    nums = flat.flat[:upto]
    got = np.zeros(len(flat.ids), dtype=np.int64)
    if weights is None:
        got += np.bincount(nums, minlength=len(flat.ids))
    else:
        np.add.at(got, nums, weights)
    out = dict(base)
    ids = flat.ids
    for num in flat_order(nums):
        b = ids[num]
        out[b] = out.get(b, 0) + int(got[num])
    return out


def flat_order(nums: np.ndarray) -> list[int]:
    """The distinct numbers of ``nums`` in the order first met."""
    if not len(nums):
        return []
    got, first = np.unique(nums, return_index=True)
    return got[np.argsort(first, kind="stable")].tolist()


def holdings(flat: Flat, upto: int, owners: np.ndarray) -> dict[int, dict[int, None]]:
    """Broker id -> its lists' numbers, in the order they come, over the first ``upto``
    replicas; brokers keyed in the order first met."""
    nums = flat.flat[:upto]
    order = np.argsort(nums, kind="stable")
    held = owners[:upto][order]
    ends = np.cumsum(np.bincount(nums, minlength=len(flat.ids)))
    out: dict[int, dict[int, None]] = {}
    for num in flat_order(nums):
        out[flat.ids[num]] = dict.fromkeys(held[ends[num - 1] if num else 0 : ends[num]].tolist())
    return out
