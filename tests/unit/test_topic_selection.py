"""Topic selection: --topics-regex / --exclude-topics-regex / --include-internal in
snapshot, plan, validate and --generate; internal topics left out by default."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.errors import UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.planner.in_process import generate, plan_in_process
from reassign_kit.planner.params import PlanParams
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.filter import INTERNAL_TOPICS, TopicFilter
from reassign_kit.snapshot.snapshot import Snapshot

NAMES = st.sampled_from(
    [*INTERNAL_TOPICS, "__health", "orders", "orders-dlq", "payments", "logs.app", "_single", "a"]
)
PATTERNS = st.none() | st.sampled_from(["orders.*", ".*dlq", "payments|logs\\..*", "__.*", "a", ""])


@settings(max_examples=300, deadline=None)
@given(NAMES, PATTERNS, PATTERNS, st.booleans())
def test_filter_is_the_stated_rule(name, include, exclude, internal):
    f = TopicFilter(include, exclude, internal)
    expected = (
        (internal or not name.startswith("__"))
        and (include is None or re.fullmatch(include, name) is not None)
        and not (exclude is not None and re.fullmatch(exclude, name) is not None)
    )
    assert f.selects(name) == expected
    assert (f.why_excluded(name) is None) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(NAMES, unique=True), PATTERNS, PATTERNS, st.booleans())
def test_split_partitions_the_topics(names, include, exclude, internal):
    kept, excluded = TopicFilter(include, exclude, internal).split(names)
    assert set(kept) | set(excluded) == set(names)
    assert not set(kept) & set(excluded)
    assert all(why for why in excluded.values())


def test_internal_topics_are_excluded_by_default_and_named():
    f = TopicFilter()
    for t in INTERNAL_TOPICS + ("__health",):
        assert "internal" in f.why_excluded(t)
    assert f.selects("orders")
    assert TopicFilter(include_internal=True).selects("__consumer_offsets")


def test_bad_regex_is_a_usage_error():
    with pytest.raises(UsageError, match="--topics-regex"):
        TopicFilter(include="(")
    with pytest.raises(UsageError, match="--exclude-topics-regex"):
        TopicFilter(exclude="[")


@st.composite
def clusters(draw):
    brokers = [BrokerEntry(b, None) for b in range(1, 6)]
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    topics, parts = [], []
    for name in names:
        topics.append(TopicEntry(name, 1))
        for p in range(draw(st.integers(1, 6))):
            reps = tuple(draw(st.permutations([1, 2, 3, 4, 5]))[:2])
            parts.append(PartitionEntry(name, p, reps, 10))
    return Snapshot.of(brokers, topics, parts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), PATTERNS, PATTERNS, st.booleans(), st.booleans())
def test_plan_touches_only_selected_topics_and_reports_the_rest(
    snap, include, exclude, internal, remove
):
    f = TopicFilter(include, exclude, internal)
    params = PlanParams(remove_brokers=(5,) if remove else (), topic_filter=f, chunks=2)
    result = plan_in_process(snap, params)
    assert all(f.selects(m.topic) for m in result.plan)
    sel = result.report()["topic_selection"]
    assert sel["topics_regex"] == include and sel["include_internal"] == internal
    ex = sel["excluded"]
    _, excluded = f.split(t.name for t in snap.topics)
    assert [t["topic"] for t in ex["topics"]] == sorted(excluded)
    assert ex["partitions"] == sum(1 for p in snap.partitions if p.topic in excluded)
    left = sum(1 for p in snap.partitions if p.topic in excluded and 5 in p.replicas)
    assert ex["replicas_left_on_removed_brokers"] == ({5: left} if remove and left else {})
    if remove:  # every selected partition leaves the removed broker
        after = {m.tp: m.replicas for m in result.plan}
        for p in snap.partitions:
            if f.selects(p.topic):
                assert 5 not in after.get(p.tp, p.replicas)


def _snap_with_internal() -> Snapshot:
    brokers = [BrokerEntry(b, None) for b in range(1, 5)]
    parts = [PartitionEntry("orders", p, (p % 4 + 1, (p + 1) % 4 + 1), 10) for p in range(8)]
    parts += [
        PartitionEntry("__consumer_offsets", p, (p % 4 + 1, (p + 2) % 4 + 1), 10) for p in range(8)
    ]
    return Snapshot.of(
        brokers, [TopicEntry("orders", 1), TopicEntry("__consumer_offsets", 1)], parts
    )


def test_plan_cli_excludes_internal_topics_and_says_so(tmp_path, capsys):
    from reassign_kit.cli import main

    s = tmp_path / "s.json"
    _snap_with_internal().write(str(s))
    out, rep = tmp_path / "plan.json", tmp_path / "report.json"
    base = ["plan", "--snapshot", str(s), "--remove-brokers", "4", "--engine", "local"]
    assert main([*base, "--output", str(out), "--report", str(rep)]) == 0
    text = capsys.readouterr().out
    assert "excluded 1 topic(s), 8 partition(s): __consumer_offsets (internal" in text
    assert "WARNING: excluded topics keep replicas on removed brokers {4: 4}" in text
    assert {m.topic for m in Plan.read(str(out))} == {"orders"}
    report = json.loads(rep.read_text())
    assert report["topic_selection"]["excluded"]["topics"][0]["topic"] == "__consumer_offsets"
    # --include-internal plans them; a regex narrows it again
    assert main([*base, "--output", str(out), "--include-internal"]) == 0
    assert {m.topic for m in Plan.read(str(out))} == {"orders", "__consumer_offsets"}
    capsys.readouterr()
    assert main([*base, "--output", str(out), "--exclude-topics-regex", "ord.*"]) == 0
    assert "plan: 0 partition(s)" in capsys.readouterr().out
    assert main([*base, "--output", str(out), "--topics-regex", "("]) == 2
    assert "--topics-regex" in capsys.readouterr().err


def test_validate_refuses_moves_of_excluded_topics(tmp_path, capsys):
    from reassign_kit.cli import main

    s, p = tmp_path / "s.json", tmp_path / "p.json"
    _snap_with_internal().write(str(s))
    Plan.of(
        [
            Move(TopicPartition("__consumer_offsets", 0), (2, 3)),
            Move(TopicPartition("orders", 0), (2, 3)),
        ]
    ).write(str(p))
    argv = ["validate", "--snapshot", str(s), "--reassignment-json-file", str(p)]
    assert main([*argv, "--engine", "local"]) == 3
    err = capsys.readouterr().err
    assert "__consumer_offsets-0: [topic-excluded]" in err and "orders-0" not in err
    assert main([*argv, "--engine", "local", "--include-internal"]) == 0
    assert main([*argv, "--engine", "local", "--include-internal", "--topics-regex", "__.*"]) == 3
    assert "orders-0: [topic-excluded] topic orders is excluded: not matched" in (
        capsys.readouterr().err
    )


def test_generate_leaves_out_internal_topics_unless_asked():
    snap = _snap_with_internal()
    cur, prop = generate(snap, ["orders", "__consumer_offsets"], [1, 2, 3])
    assert {m.topic for m in cur} == {m.topic for m in prop} == {"orders"}
    cur, prop = generate(
        snap, ["orders", "__consumer_offsets"], [1, 2, 3], TopicFilter(include_internal=True)
    )
    assert {m.topic for m in prop} == {"orders", "__consumer_offsets"}
    assert all(4 not in m.replicas for m in prop)


def test_rf_change_of_an_excluded_topic_is_refused():
    snap = _snap_with_internal()
    with pytest.raises(UsageError, match="topic __consumer_offsets is excluded: internal"):
        plan_in_process(snap, PlanParams(replication_factor=3, rf_topics=("__consumer_offsets",)))


def test_snapshot_select_keeps_brokers_and_drops_excluded_topics():
    snap, excluded = _snap_with_internal().select(TopicFilter())
    assert [t.name for t in snap.topics] == ["orders"]
    assert {p.topic for p in snap.partitions} == {"orders"}
    assert [b.id for b in snap.brokers] == [1, 2, 3, 4]
    assert list(excluded) == ["__consumer_offsets"]


def _generate_on_sim(tmp_path, topics, *extra):
    from reassign_kit.cli import reassign
    from reassign_kit.cluster.simulate import SimCluster

    sim = SimCluster(3)
    sim.add_topic("__consumer_offsets", [[3, 1]] * 3)
    sim.add_topic("orders", [[3, 2]] * 2)
    f = tmp_path / "topics.json"
    f.write_text(json.dumps({"version": 1, "topics": [{"topic": t} for t in topics]}))
    argv = ["--bootstrap-server", "sim:9092", "--generate", "--broker-list", "1,2"]
    p = reassign.build_parser()
    args = p.parse_args([*argv, "--topics-to-move-json-file", str(f), *extra])
    assert reassign.check_args(p, args) == "generate"
    return reassign.plan_cmd.run_generate(args, sim)


def test_generate_refuses_when_the_selection_leaves_no_topic(tmp_path, capsys):
    # a file naming only internal topics gave an empty proposal and exit 0: "nothing to move"
    with pytest.raises(UsageError, match="leaves out every topic.*__consumer_offsets: internal"):
        _generate_on_sim(tmp_path, ["__consumer_offsets"])
    with pytest.raises(UsageError, match="orders: matched by --exclude-topics-regex"):
        _generate_on_sim(tmp_path, ["orders"], "--exclude-topics-regex", "ord.*")
    assert _generate_on_sim(tmp_path, ["__consumer_offsets"], "--include-internal") == 0
    out = capsys.readouterr().out
    assert '"topic": "__consumer_offsets"' in out.split("Proposed partition")[1]
