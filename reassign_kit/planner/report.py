"""The plan report: what a plan moves and what it buys — moves, bytes in and out per broker,
leadership changes, replica / leader / byte balance before and after, and the lower bound on
moved replicas the plan is measured against. Pure: built from a ``PlanResult``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..model import Plan
from .dir_balance import disk_lines
from .network_report import network_lines
from .rules import VIRTUAL, RuleContext, apply_rf


def _spread(values: dict[int, int], keys) -> int:
    vals = [values.get(b, 0) for b in keys]
    return max(vals) - min(vals) if vals else 0


@dataclass
class PlanResult:
    """A plan, the current assignment of the same partitions (the rollback file), and the
    numbers the report needs."""

    plan: Plan
    current: Plan
    prepared: Any  # planner.quotas.Prepared (the planner imports this module)
    moved_replicas: int
    moved_bytes: int
    leadership_changes: int
    changed: list[tuple]  # planner.rows.Changed: (topic, partition, old, new, size)
    timings: dict[str, float] = field(default_factory=dict)
    # leader_flow.LeaderBalance.summary(): best achievable spread, and why when it is not <= 1
    leader_balance: dict | None = None
    # snapshot.excluded_summary(): the topics the selection left out
    excluded: dict | None = None
    # rack_repair.repair_report(): rack violations before / after the plan and why any is left
    rack_repair: dict | None = None
    # network_report.network_report(): the network goals, per broker before / after
    network: dict | None = None
    # the bytes of the planned partitions, local and remote (tiered topics): beside
    # moved_bytes, what the moves copy (snapshot.tier.move_bytes)
    topic_bytes: int | None = None
    # dir_plan.disk_report(): the log dirs of each broker before / after (--balance disks)
    disks: dict | None = None
    # the planned partitions' size growth the snapshot recorded (bytes/s; None: no loads, or
    # a Parquet snapshot Spark read itself), written into the plan record for the run's order
    growth_bytes_s: dict | None = None

    @property
    def lower_bound(self) -> int:
        return self.prepared.lower_bound

    def report(self) -> dict:
        return build_report(self)


def broker_totals(result: PlanResult) -> dict[str, dict[int, int]]:
    """Per broker before and after the plan: replicas, leaders, bytes, and what moves in / out."""
    prep = result.prepared
    agg = prep.agg
    rf_change = prep.params.rf_change()
    before = {b: n for b, n in agg.per_broker(agg.replicas).items() if b != VIRTUAL}
    lead_before = {b: n for b, n in agg.per_broker(agg.leaders).items() if b != VIRTUAL}
    bytes_before = {b: n for b, n in agg.bytes.items() if b != VIRTUAL}
    after, lead_after, bytes_after = dict(before), dict(lead_before), dict(bytes_before)
    rin: dict[int, int] = defaultdict(int)
    rout: dict[int, int] = defaultdict(int)
    bin_: dict[int, int] = defaultdict(int)
    bout: dict[int, int] = defaultdict(int)
    for topic, _, old, new, size in result.changed:
        shaped = [b for b in apply_rf(topic, old, rf_change) if b >= 0]
        for b in old:  # the aggregates saw the replica list after an RF decrease
            if b not in shaped:
                before[b] = before.get(b, 0) + 1
                bytes_before[b] = bytes_before.get(b, 0) + size
        for b in shaped:
            after[b] = after.get(b, 0) - 1
            bytes_after[b] = bytes_after.get(b, 0) - size
        for b in new:
            after[b] = after.get(b, 0) + 1
            bytes_after[b] = bytes_after.get(b, 0) + size
        if old and shaped and old[0] != new[0]:
            lead_after[old[0]] = lead_after.get(old[0], 0) - 1
            lead_after[new[0]] = lead_after.get(new[0], 0) + 1
        for b in set(new) - set(old):
            rin[b] += 1
            bin_[b] += size
        for b in set(old) - set(new):
            rout[b] += 1
            bout[b] += size
    return {
        "replicas_before": before,
        "replicas_after": after,
        "leaders_before": lead_before,
        "leaders_after": lead_after,
        "bytes_before": bytes_before,
        "bytes_after": bytes_after,
        "replicas_in": dict(rin),
        "replicas_out": dict(rout),
        "bytes_in": dict(bin_),
        "bytes_out": dict(bout),
    }


def bytes_goal(result: PlanResult, bytes_after: dict[int, int]) -> dict[str, Any]:
    """The bytes goal and the capacity limits after the plan: each broker's share, band and
    bytes, whether every broker is within its band, and bytes moved beside their lower bound."""
    prep = result.prepared
    params = prep.params
    goal = "bytes" in params.balance
    bands = getattr(prep, "bands", {}) or {}
    shares = getattr(prep, "shares", {}) or {}
    lb = int(getattr(prep, "bytes_lower_bound", 0))
    outside = []
    for b, (lo, hi) in sorted(bands.items()):
        v = bytes_after.get(b, 0)
        if v < lo or v > hi:
            outside.append({"broker": b, "bytes_after": v, "low": int(lo), "high": int(hi)})
    dev = [
        abs(bytes_after.get(b, 0) - sh) / sh for b, sh in shares.items() if sh > 0 and b in bands
    ]
    cap = params.capacity
    return {
        "goal": goal,
        "tolerance": params.bytes_tolerance if goal else None,
        "capacity_file": cap.source if cap is not None else None,
        "shares": "capacity" if cap is not None else "equal",
        "met": (not outside) if bands else None,
        "brokers_outside": outside,
        "max_deviation_from_share": max(dev) if dev else None,
        "moved_bytes": result.moved_bytes,
        "lower_bound_moved_bytes": lb,
        "moved_bytes_over_lower_bound": (result.moved_bytes / lb) if lb else None,
    }


def build_report(result: PlanResult) -> dict[str, Any]:
    prep = result.prepared
    ctx = prep.ctx
    t = broker_totals(result)
    before, after = t["replicas_before"], t["replicas_after"]
    lead_before, lead_after = t["leaders_before"], t["leaders_after"]
    bytes_before, bytes_after = t["bytes_before"], t["bytes_after"]
    rf_change = prep.params.rf_change()
    allowed = ctx.allowed
    racks = sorted({ctx.racks[b] for b in allowed if ctx.racks.get(b) is not None})

    def balance(values: dict[int, int]) -> dict[str, Any]:
        return _balance(values, ctx, racks)

    lb = result.lower_bound
    off_target = sorted(b for b in allowed if after.get(b, 0) != prep.targets.get(b, 0))
    return {
        "summary": {
            "partitions_in_plan": len(result.plan),
            "moved_replicas": result.moved_replicas,
            "lower_bound_moved_replicas": lb,
            "moved_over_lower_bound": (result.moved_replicas / lb) if lb else None,
            # brokers not at their replica target: the goal could not be met everywhere under
            # the hard constraints (then moved replicas may also fall below the bound)
            "brokers_off_target": off_target if "replicas" in prep.params.balance else [],
            "moved_bytes": result.moved_bytes,
            "bytes_in_topics": result.topic_bytes,
            "leadership_changes": result.leadership_changes,
            "removed_brokers": sorted(ctx.removed),
            "goals": list(prep.params.balance),
            "replication_factor_change": dict(rf_change),
            "rack_aware": ctx.rack_count > 1,
            "racks": racks,
            "chunks": prep.params.chunks,
        },
        "balance": {
            "replicas": {"before": balance(before), "after": balance(after)},
            "leaders": {"before": balance(lead_before), "after": balance(lead_after)},
            "bytes": {"before": balance(bytes_before), "after": balance(bytes_after)},
        },
        "leader_balance": result.leader_balance,
        "rack_repair": result.rack_repair,
        "bytes_goal": bytes_goal(result, bytes_after),
        "network_goal": result.network,
        "disk_goal": result.disks,
        "topic_selection": {
            **prep.params.topic_filter.describe(),
            "excluded": result.excluded
            or {"topics": [], "partitions": 0, "replicas_left_on_removed_brokers": {}},
        },
        "brokers": _per_broker(result, t),
    }


def _per_broker(result: PlanResult, t: dict[str, dict[int, int]]) -> list[dict[str, Any]]:
    """One row per broker: its rack, replicas, leaders and bytes before, after and moving,
    and its limits (share, disk_bytes, max_replicas)."""
    prep = result.prepared
    ctx = prep.ctx
    before, after = t["replicas_before"], t["replicas_after"]
    lead_before, lead_after = t["leaders_before"], t["leaders_after"]
    bytes_before, bytes_after = t["bytes_before"], t["bytes_after"]
    rin, rout, bin_, bout = t["replicas_in"], t["replicas_out"], t["bytes_in"], t["bytes_out"]
    cap = prep.params.capacity
    shares = getattr(prep, "shares", {}) or {}
    brokers = sorted(set(ctx.racks) | set(before))
    return [
        {
            "broker": b,
            "rack": ctx.racks.get(b),
            "removed": b in ctx.removed,
            "replicas_before": before.get(b, 0),
            "replicas_after": after.get(b, 0),
            "replicas_target": prep.targets.get(b, 0),
            "replicas_in": rin.get(b, 0),
            "replicas_out": rout.get(b, 0),
            "leaders_before": lead_before.get(b, 0),
            "leaders_after": lead_after.get(b, 0),
            "bytes_before": bytes_before.get(b, 0),
            "bytes_after": bytes_after.get(b, 0),
            "bytes_in": bin_.get(b, 0),
            "bytes_out": bout.get(b, 0),
            "bytes_share": int(shares[b]) if b in shares else None,
            "disk_bytes": cap.disk(b) if cap is not None else None,
            "max_replicas": cap.max_replicas(b) if cap is not None else None,
        }
        for b in brokers
    ]


def _balance(values: dict[int, int], ctx: RuleContext, racks: list[str]) -> dict[str, Any]:
    """How even ``values`` are over the brokers left (and within each rack)."""
    allowed = ctx.allowed
    out: dict[str, Any] = {"spread": _spread(values, allowed)}
    if ctx.rack_count > 1:
        out["spread_within_rack"] = {
            r: _spread(values, [b for b in allowed if ctx.racks[b] == r]) for r in racks
        }
    vals = [values.get(b, 0) for b in allowed]
    out["min"], out["max"] = (min(vals), max(vals)) if vals else (0, 0)
    return out


def unmet_goals(report: dict[str, Any]) -> list[str]:
    """The stated goals the plan does not meet, one line each (empty: every goal met). The
    CLI exits ``EXIT_GOAL_NOT_MET`` on any: a plan that leaves a broker outside
    its bytes band is not 'done', even when it moves nothing."""
    out = []
    bg = report.get("bytes_goal") or {}
    if bg.get("goal") and bg.get("met") is False:
        shown = ", ".join(
            f"broker {o['broker']} ({o['bytes_after']} bytes, band {o['low']}..{o['high']})"
            for o in bg["brokers_outside"][:10]
        )
        more = len(bg["brokers_outside"]) - 10
        out.append(
            f"bytes goal (within {100 * bg['tolerance']:g}% of each broker's {bg['shares']} "
            f"share) not met: {shown}" + (f" and {more} more" if more > 0 else "")
        )
    out += (report.get("network_goal") or {}).get("unmet", [])
    out += (report.get("disk_goal") or {}).get("unmet", [])
    return out


def _mb(n: Any) -> str:
    """Bytes in MB (10^6), the unit of the broker table below (the report keeps bytes)."""
    return f"{n / 1e6:.1f} MB" if isinstance(n, int | float) else str(n)


def format_report(report: dict[str, Any]) -> str:
    """A few lines for the terminal."""
    s = report["summary"]
    b = report["balance"]
    ratio = s["moved_over_lower_bound"]
    lines = [
        f"partitions in plan: {s['partitions_in_plan']}   moved replicas: {s['moved_replicas']} "
        f"(lower bound {s['lower_bound_moved_replicas']}"
        + (f", x{ratio:.3f}" if ratio else "")
        + f")   moved: {_mb(s['moved_bytes'])}   leadership changes: {s['leadership_changes']}",
        f"replica spread: {b['replicas']['before']['spread']} -> {b['replicas']['after']['spread']}   "
        f"leader spread: {b['leaders']['before']['spread']} -> {b['leaders']['after']['spread']}   "
        f"bytes per broker max/min: {_mb(b['bytes']['after']['max'])} / "
        f"{_mb(b['bytes']['after']['min'])}",
    ]
    if s.get("bytes_in_topics") is not None:
        lines.append(
            f"{s['bytes_in_topics'] / 2**30:.2f} GiB in the topics, "
            f"{s['moved_bytes'] / 2**30:.2f} GiB will be copied"
        )
    lines += _bytes_goal_lines(report.get("bytes_goal"))
    lines += network_lines(report.get("network_goal"))
    lines += disk_lines(report.get("disk_goal"))
    lines += _rack_repair_lines(report.get("rack_repair"))
    lines += _leader_lines(report)
    lines += _excluded_lines(report.get("topic_selection", {}).get("excluded") or {})
    lines += _broker_rows(report)
    return "\n".join(lines)


def _bytes_goal_lines(bg: dict[str, Any] | None) -> list[str]:
    """The bytes goal (or the capacity file's limits): met, or the brokers outside."""
    lines: list[str] = []
    if bg and (bg["goal"] or bg["capacity_file"]):
        what = (
            f"bytes within {100 * bg['tolerance']:g}% of each broker's {bg['shares']} share"
            if bg["goal"]
            else "bytes within each broker's disk_bytes"
        )
        if bg["capacity_file"]:
            what += f" (capacity {bg['capacity_file']}: disk_bytes and max_replicas never exceeded)"
        state = (
            "met"
            if bg["met"]
            else "NOT met for broker(s) "
            + ", ".join(
                f"{o['broker']} ({o['bytes_after']} not in {o['low']}..{o['high']})"
                for o in bg["brokers_outside"][:10]
            )
        )
        dev = bg["max_deviation_from_share"]
        ratio = bg["moved_bytes_over_lower_bound"]
        lines.append(
            f"bytes goal: {what}: {state}"
            + (f"; max deviation from share {100 * dev:.2f}%" if dev is not None else "")
            + f"; moved bytes {bg['moved_bytes']} (lower bound {bg['lower_bound_moved_bytes']}"
            + (f", x{ratio:.3f}" if ratio else "")
            + ")"
        )
    return lines


def _rack_repair_lines(rr: dict[str, Any] | None) -> list[str]:
    """Rack-awareness violations before and after, and why some are left."""
    lines: list[str] = []
    if rr and (rr["violations_before"] or rr["violations_after"]):
        lines.append(
            f"rack-awareness: {rr['violations_before']} partition(s) spanned fewer racks than "
            f"min(RF, racks) -> {rr['violations_after']} after the plan "
            f"({rr['repaired']} repaired)"
            + "".join(
                f"; {v['partitions']} left: {why} (e.g. {', '.join(v['examples'][:3])})"
                for why, v in rr["left"].items()
            )
        )
    return lines


def _leader_lines(report: dict[str, Any]) -> list[str]:
    """The demoted brokers (what each still leads, and why) and a leader spread no replica
    sets allow to be even."""
    lines: list[str] = []
    lb = report.get("leader_balance")
    if lb and lb.get("demoted_brokers"):
        lead = {r["broker"]: (r["leaders_before"], r["leaders_after"]) for r in report["brokers"]}
        left = lb.get("not_demoted") or {}
        lines.append(
            "demoted: "
            + ", ".join(
                f"broker {b} leads {lead.get(b, (0, 0))[0]} -> {lead.get(b, (0, 0))[1]}"
                for b in lb["demoted_brokers"]
            )
            + (
                f"; {left['count']} partition(s) still led by a demoted broker"
                if left.get("count")
                else ""
            )
        )
        for r in left.get("partitions", [])[:20]:
            lines.append(f"  not demoted: {r['partition']} (broker {r['broker']}): {r['why']}")
        if left.get("count", 0) > 20:
            lines.append(f"  … {left['count'] - 20} more (see the JSON report)")
    if lb and not lb["achievable"]:
        lines.append(
            f"leader spread {lb['spread']} is the best these replica sets allow "
            f"(an even spread would be {lb['ideal_spread']}): " + "; ".join(lb["why_not_ideal"])
        )
    return lines


def _excluded_lines(ex: dict[str, Any]) -> list[str]:
    """What the topic selection left out, and a warning when that keeps a removed broker
    from emptying."""
    lines: list[str] = []
    if ex.get("topics"):
        shown = ", ".join(f"{t['topic']} ({t['reason']})" for t in ex["topics"][:10])
        more = len(ex["topics"]) - 10
        lines.append(
            f"excluded {len(ex['topics'])} topic(s), {ex['partitions']} partition(s): {shown}"
            + (f" and {more} more (see the JSON report)" if more > 0 else "")
        )
        if ex.get("replicas_left_on_removed_brokers"):
            lines.append(
                "WARNING: excluded topics keep replicas on removed brokers "
                f"{ex['replicas_left_on_removed_brokers']} (broker: replicas); the broker is "
                "not empty after this plan"
            )
    return lines


def _broker_rows(report: dict[str, Any]) -> list[str]:
    """One row per broker: replicas and leaders before -> after, in and out."""
    lines = [
        f"{'broker':>6} {'rack':>6} {'replicas':>17} {'leaders':>13} {'in':>6} {'out':>6} {'MB in':>9} {'MB out':>9}",
    ]
    for r in report["brokers"]:
        lines.append(
            f"{r['broker']:>6} {str(r['rack']):>6} {r['replicas_before']:>7}->{r['replicas_after']:<7}"
            f"{'x' if r['removed'] else ' ':>2} {r['leaders_before']:>5}->{r['leaders_after']:<6} "
            f"{r['replicas_in']:>6} {r['replicas_out']:>6} {r['bytes_in'] / 1e6:>9.1f} {r['bytes_out'] / 1e6:>9.1f}"
        )
    return lines
