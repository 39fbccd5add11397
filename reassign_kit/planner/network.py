"""The network goals' model: what each broker carries for a placement, the hard limits and the
distribution targets, and how far a placement is from them. Pure.

Per partition with produce ``P`` bytes/s, consumer fetch ``C`` bytes/s and replicas
``[leader, *followers]`` (the first replica: the preferred leader, as after an election):

- network in:  the leader and every follower take ``P`` (produce, and replication in);
- network out: the leader sends ``C + P x len(followers)`` (consumers, and replication out);
- leader load: the leader's ``P`` (Cruise Control's leader bytes-in).

Goals, in priority order (``PRIORITY``): the hard limits (a broker's ``network_in_bytes_s`` and
``network_out_bytes_s`` in the capacity file), then the distribution targets asked for with
``--balance`` (``network_in``, ``network_out``, ``leader_load``): every broker that may hold
replicas at most ``(1 + tolerance)`` x its share of the total (an equal share, or one weighted
by its capacity when every such broker has one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .rules import Capacity

RESOURCES = ("network_in", "network_out", "leader_load")
NETWORK = "network"  # --balance network: all three
DEFAULT_NETWORK_TOLERANCE = 0.10
CAPPED = {"network_in": "network_in_bytes_s", "network_out": "network_out_bytes_s"}
PRIORITY = ("capacity", *RESOURCES)  # the order goals are met in, and said in


def broker_loads(
    assignment: Iterable[tuple[Sequence[int], tuple[float, float]]], brokers: Iterable[int]
) -> dict[str, dict[int, float]]:
    """Per resource, per broker: its load for ``(replicas, (produce, fetch))`` pairs."""
    out: dict[str, dict[int, float]] = {r: dict.fromkeys(brokers, 0.0) for r in RESOURCES}
    add_loads(out, assignment)
    return out


def add_loads(
    out: dict[str, dict[int, float]],
    assignment: Iterable[tuple[Sequence[int], tuple[float, float]]],
) -> None:
    """``out`` (resource -> broker -> bytes/s) with the loads of ``assignment`` added, in its
    order (the same order gives the same sums to the last bit)."""
    nin, nout, lead = out["network_in"], out["network_out"], out["leader_load"]
    for reps, (produce, fetch) in assignment:
        if not reps:
            continue
        for b in reps:
            nin[b] = nin.get(b, 0.0) + produce
        nout[reps[0]] = nout.get(reps[0], 0.0) + fetch + produce * (len(reps) - 1)
        lead[reps[0]] = lead.get(reps[0], 0.0) + produce


@dataclass(frozen=True)
class Goals:
    """What a placement must meet: the brokers that may hold replicas, the capacity limits
    (resource -> broker -> bytes/s), the goals asked for and their tolerance."""

    brokers: tuple[int, ...]
    limits: Mapping[str, Mapping[int, float]]
    balance: tuple[str, ...]
    tolerance: float

    @classmethod
    def of(
        cls,
        brokers: Iterable[int],
        capacity: Capacity | None,
        balance: Iterable[str],
        tolerance: float,
    ) -> Goals:
        bs = tuple(sorted(brokers))
        limits: dict[str, dict[int, float]] = {}
        for res, key in CAPPED.items():
            caps = {b: getattr(capacity.of(b), key, None) for b in bs} if capacity else {}
            caps = {b: float(v) for b, v in caps.items() if v is not None}
            if caps:
                limits[res] = caps
        return cls(bs, limits, tuple(g for g in RESOURCES if g in set(balance)), tolerance)

    def targets(self, loads: Mapping[str, Mapping[int, float]]) -> dict[str, dict[int, float]]:
        """Per goal asked for, per broker: the most it should carry."""
        out = {}
        for res in self.balance:
            total = sum(loads[res].values())  # removed brokers' load must land somewhere
            caps = self.limits.get(res, {})
            weighted = caps and all(b in caps for b in self.brokers)
            weight = {b: caps[b] if weighted else 1.0 for b in self.brokers}
            whole = sum(weight.values()) or 1.0
            out[res] = {b: (1 + self.tolerance) * total * weight[b] / whole for b in self.brokers}
        return out

    def excess(self, loads: Mapping[str, Mapping[int, float]], holders: Iterable[int]) -> tuple:
        """How far from the goals, in priority order (0.0 each: every goal met): the bytes/s
        over the hard limits, then for each goal the bytes/s over its targets (a broker that
        may hold nothing counts all it carries). ``holders``: brokers holding replicas."""
        allowed = set(self.brokers)
        over_cap = sum(
            max(0.0, loads[res].get(b, 0.0) - cap)
            for res, caps in self.limits.items()
            for b, cap in caps.items()
        )
        targets = self.targets(loads)
        soft = []
        for res in self.balance:
            t = targets[res]
            soft.append(
                sum(
                    max(0.0, v - t[b]) if b in allowed else v
                    for b, v in loads[res].items()
                    if b in allowed or b in holders
                )
            )
        return (over_cap, *soft)

    def unmet(self, loads: Mapping[str, Mapping[int, float]]) -> list[str]:
        """Each goal not met, with its numbers (empty: every goal met)."""
        out = []
        for res, caps in self.limits.items():
            over = [
                f"broker {b} {loads[res].get(b, 0.0) / 1e6:.3f} > {cap / 1e6:.3f} MB/s"
                for b, cap in sorted(caps.items())
                if loads[res].get(b, 0.0) > cap * (1 + 1e-9) + 1e-6
            ]
            if over:
                out.append(f"{res} capacity (hard) exceeded: " + ", ".join(over))
        targets = self.targets(loads)
        for res in self.balance:
            over = [
                f"broker {b} {loads[res].get(b, 0.0) / 1e6:.3f} > {t / 1e6:.3f} MB/s"
                for b, t in sorted(targets[res].items())
                if loads[res].get(b, 0.0) > t * (1 + 1e-9) + 1e-6
            ]
            if over:
                out.append(
                    f"{res} goal (at most {1 + self.tolerance:g}x each broker's share) not met: "
                    + ", ".join(over)
                )
        return out
