"""Hostile input on the real cluster: a batch of hostile plans through ``--execute``
(legacy with a throttle, and paced) on the sandbox. Each one is refused with a message naming
the plan and nothing is sent: afterwards no reassignment is in flight (ListPartitionReassignments
is empty), the topic's replicas are unchanged and no throttle config (topic lists, broker
rates) changed. The plans mix valid moves of a real topic with hostile entries (a partial
submission would show), and add the byte-level junk of the unit fuzz suite."""

from __future__ import annotations

import json
import time

import pytest
from fuzz_strategies import Tally, check_outcome, plan_files, run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit import cli as rk_cli
from reassign_kit.model import TopicPartition
from reassign_kit.throttles.configs import current_throttles

pytestmark = pytest.mark.integration

PARTITIONS = 3


def hostile_entries(topic: str, brokers: list[int]):
    ok_replicas = st.lists(st.sampled_from(brokers), min_size=1, max_size=2, unique=True)
    valid = st.builds(
        lambda p, r: {"topic": topic, "partition": p, "replicas": r},
        st.integers(0, PARTITIONS - 1),
        ok_replicas,
    )
    bad = st.one_of(
        st.builds(  # a partition the topic does not have
            lambda p, r: {"topic": topic, "partition": p, "replicas": r},
            st.integers(PARTITIONS, 2**31), ok_replicas,
        ),
        st.builds(  # a broker the cluster does not have, or a negative / repeated one
            lambda p, b: {"topic": topic, "partition": p, "replicas": [brokers[0], b]},
            st.integers(0, PARTITIONS - 1), st.sampled_from([99, -1, brokers[0], 2**40]),
        ),
        st.builds(  # a log dir that is not absolute, or of the wrong length
            lambda p, d: {"topic": topic, "partition": p, "replicas": [brokers[1]], "log_dirs": d},
            st.integers(0, PARTITIONS - 1), st.sampled_from([["rel"], ["any", "any"], [""]]),
        ),
        st.builds(lambda p: {"topic": f"{topic}-missing", "partition": p, "replicas": [1]},
                  st.integers(0, 2)),
        st.fixed_dictionaries({"topic": st.just(topic), "partition": st.sampled_from(["0", None])}),
    )  # fmt: skip
    return st.tuples(st.lists(valid, max_size=2), st.lists(bad, min_size=1, max_size=2)).map(
        lambda vb: {"version": 1, "partitions": vb[0] + vb[1]}
    )


def test_hostile_plans_through_execute_change_nothing(sandbox, topic_name, tmp_path, gw):
    topic = topic_name("fuzz")
    sandbox.create_topic(topic, PARTITIONS, rf=2)
    brokers = sorted(b.id for b in gw.brokers())
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    deadline = time.monotonic() + 120  # others' moves (earlier tests) finish first
    while gw.list_reassignments():
        assert time.monotonic() < deadline, "reassignments of other tests still in flight"
        time.sleep(1)

    def state():
        return (
            {tp: st.replicas for tp, st in gw.describe_partitions(tps).items()},
            dict(gw.list_reassignments()),
            current_throttles(gw, [topic], brokers),
        )

    before = state()
    assert before[1] == {}
    tally = Tally("sandbox_execute")
    n = iter(range(10**6))

    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        plan=st.one_of(
            hostile_entries(topic, brokers).map(lambda d: json.dumps(d).encode()), plan_files
        ),
        mode=st.sampled_from(["legacy", "legacy-throttled", "paced"]),
    )
    def case(plan, mode):
        i = next(n)
        path = tmp_path / f"plan-{i}.json"
        path.write_bytes(plan)
        argv = ["--bootstrap-server", sandbox.bootstrap_servers, "--execute",
                "--reassignment-json-file", str(path), "--rollback-file", str(tmp_path / f"rb-{i}")]  # fmt: skip
        if mode == "legacy-throttled":
            argv += ["--throttle", "1000000"]
        if mode == "paced":
            argv += ["--reassignment-batch-size", "1", "--throttle", "1000000",
                     "--journal", str(tmp_path / f"j-{i}.jsonl")]  # fmt: skip
        code, out, err = run_main(rk_cli.main, argv, limit_s=60)
        outcome = check_outcome(code, out, err, argv, names=[str(path)])
        assert outcome == "refused" and code in (2, 3), f"{argv}: exit {code}\n{out}\n{err}"
        tally.add(outcome, code)

    case()
    after = state()
    assert after[1] == {}, f"in flight after the hostile plans: {after[1]}"
    assert after == before
    assert tally.write()["cases"] >= 40
