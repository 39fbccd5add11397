"""Plan JSON: every structural and cluster rule has a bad file, a valid plan passes, and the
canonical form round-trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit import model
from reassign_kit import validate as v
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition

TP = TopicPartition
VALID = {
    "version": 1,
    "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 2, 3]},
        {
            "topic": "orders",
            "partition": 1,
            "replicas": [2, 3, 4],
            "log_dirs": ["any", "/d/b", "any"],
        },
        {"topic": "events", "partition": 0, "replicas": [4]},
    ],
}


def problems_of(text: str) -> list[v.Problem]:
    with pytest.raises(InvalidPlanError) as e:
        model.parse_plan(text, "bad.json")
    assert "nothing was sent to the cluster" in str(e.value)
    return e.value.problems


def rules(text: str) -> set[str]:
    return {p.rule for p in problems_of(text)}


def entry(**kw) -> str:
    e = {"topic": "orders", "partition": 0, "replicas": [1, 2]}
    e.update(kw)
    e = {k: val for k, val in e.items() if val is not ...}
    return json.dumps({"version": 1, "partitions": [e]})


def test_valid_plan_passes_and_is_canonical():
    plan = model.parse_plan(json.dumps(VALID), "ok.json")
    assert [str(m.tp) for m in plan] == ["events-0", "orders-0", "orders-1"]  # sorted
    assert plan.by_tp()[TP("orders", 1)].log_dirs == ("any", "/d/b", "any")
    assert Plan.from_json(plan.to_json()) == plan
    # Accepted by the cluster rules too.
    view = v.ClusterView.of(
        {1, 2, 3, 4}, {"orders": 2, "events": 1}, log_dirs={3: ["/d/a", "/d/b"]}
    )
    assert v.validate_plan(plan, view) is plan


@pytest.mark.parametrize(
    "text, rule, where",
    [
        ('{"version": 1,\n  "partitions": [,]}', model.MALFORMED_JSON, "bad.json:2:18"),
        (
            '{"version": 1, "partitions": [{"topic": "a", "partition": NaN, "replicas": [1]}]}',
            model.MALFORMED_JSON,
            "bad.json",
        ),
        ("[1, 2]", model.NOT_AN_OBJECT, "plan"),
        ('{"version": 1, "version": 1, "partitions": []}', model.DUPLICATE_KEY, "plan"),
        ('{"version": 1, "partitions": [], "extra": 1}', model.UNKNOWN_FIELD, "plan"),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]}',
            model.MISSING_FIELD,
            "plan",
        ),
        (
            '{"version": 2, "partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]}',
            model.WRONG_VERSION,
            "plan",
        ),
        (
            '{"version": "1", "partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]}',
            model.WRONG_VERSION,
            "plan",
        ),
        ('{"version": 1}', model.MISSING_FIELD, "plan"),
        ('{"version": 1, "partitions": {}}', model.WRONG_TYPE, "plan"),
        ('{"version": 1, "partitions": []}', v.EMPTY_PLAN, "plan"),
        ('{"version": 1, "partitions": [7]}', model.WRONG_TYPE, "partitions[0]"),
    ],
)
def test_document_rules(text, rule, where):
    ps = problems_of(text)
    assert rule in {p.rule for p in ps}
    assert any(p.where == where for p in ps if p.rule == rule), ps


@pytest.mark.parametrize(
    "kw, rule",
    [
        ({"topic": ...}, model.MISSING_FIELD),
        ({"partition": ...}, model.MISSING_FIELD),
        ({"replicas": ...}, model.MISSING_FIELD),
        ({"topic": 5}, model.WRONG_TYPE),
        ({"topic": ""}, model.EMPTY_TOPIC),
        ({"partition": "0"}, model.WRONG_TYPE),
        ({"partition": 1.0}, model.WRONG_TYPE),
        ({"partition": True}, model.WRONG_TYPE),
        ({"partition": -1}, model.NEGATIVE_PARTITION),
        ({"replicas": "1,2"}, model.WRONG_TYPE),
        ({"replicas": [1, "2"]}, model.WRONG_TYPE),
        ({"replicas": []}, model.EMPTY_REPLICAS),
        ({"replicas": [1, 2, 1]}, model.DUPLICATE_BROKER),
        ({"replicas": [1, -2]}, model.NEGATIVE_BROKER),
        ({"log_dirs": ["any"]}, model.LOG_DIRS_LENGTH),
        ({"log_dirs": "any"}, model.WRONG_TYPE),
        ({"log_dirs": ["any", "data/x"]}, model.LOG_DIR_NOT_ABSOLUTE),
        ({"replica": [1]}, model.UNKNOWN_FIELD),
    ],
)
def test_entry_rules_name_the_partition(kw, rule):
    ps = problems_of(entry(**kw))
    hits = [p for p in ps if p.rule == rule]
    assert hits, ps
    if "topic" not in kw and "partition" not in kw:
        assert hits[0].where == "partitions[0] (orders-0)"
    assert str(hits[0]).startswith(hits[0].where)


def test_duplicate_partition_names_both_entries():
    text = json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "a", "partition": 0, "replicas": [1]},
                {"topic": "a", "partition": 0, "replicas": [2]},
            ],
        }
    )
    (p,) = problems_of(text)
    assert p.rule == model.DUPLICATE_PARTITION and p.where == "partitions[1] (a-0)"
    assert "partitions[0]" in p.detail


def test_every_problem_at_once():
    text = json.dumps(
        {
            "version": 3,
            "partitions": [
                {"topic": "a", "partition": 0, "replicas": [1, 1]},
                {"topic": "a", "partition": 0, "replicas": []},
                {"topic": "b", "partition": -1, "replicas": [-1], "log_dirs": ["x"]},
            ],
        }
    )
    got = rules(text)
    assert {
        model.WRONG_VERSION,
        model.DUPLICATE_BROKER,
        model.DUPLICATE_PARTITION,
        model.NEGATIVE_PARTITION,
        model.NEGATIVE_BROKER,
        model.LOG_DIR_NOT_ABSOLUTE,
    } <= got


def test_read_missing_file(tmp_path):
    with pytest.raises(InvalidPlanError, match="cannot read"):
        Plan.read(str(tmp_path / "nope.json"))


# ----------------------------------------------------------------------------- cluster rules

VIEW = v.ClusterView.of(
    {1, 2, 3, 4},
    {"orders": 2},
    states={
        TP("orders", 0): PartitionState(TP("orders", 0), (1, 2, 3)),
        # reassigning from [1,2] to [2,3]: replicas 1,2,3, adding 3, removing 1
        TP("orders", 1): PartitionState(TP("orders", 1), (1, 2, 3), adding=(3,), removing=(1,)),
    },
    log_dirs={1: ["/d/a", "/d/b"]},
)


def cluster_rules(*moves: Move, disallow: bool = False) -> list[v.Problem]:
    plan = Plan.of(moves)
    with pytest.raises(InvalidPlanError) as e:
        v.validate_plan(plan, VIEW, disallow_replication_factor_change=disallow)
    assert e.value.problems == v.plan_problems(
        plan, VIEW, disallow_replication_factor_change=disallow
    )
    return e.value.problems


@pytest.mark.parametrize(
    "move, rule",
    [
        (Move(TP("nope", 0), (1,)), v.UNKNOWN_TOPIC),
        (Move(TP("orders", 2), (1,)), v.PARTITION_OUT_OF_RANGE),
        (Move(TP("orders", 0), (1, 9)), v.UNKNOWN_BROKER),
        (Move(TP("orders", 0), (1, 2), ("/d/c", "any")), v.UNKNOWN_LOG_DIR),
    ],
)
def test_cluster_rules(move, rule):
    (p,) = cluster_rules(move)
    assert p.rule == rule and p.where == str(move.tp)


def test_cluster_rules_all_at_once_and_valid_passes():
    ps = cluster_rules(Move(TP("nope", 0), (9,)), Move(TP("orders", 5), (1,)))
    assert [p.rule for p in ps] == [v.UNKNOWN_TOPIC, v.UNKNOWN_BROKER, v.PARTITION_OUT_OF_RANGE]
    ok = Plan.of(
        [Move(TP("orders", 0), (4, 3, 2), ("/d/a", "any", "/unknown-broker-dirs-not-checked"))]
    )
    v.validate_plan(ok, VIEW)


def test_rf_guard_client_side():
    # Not reassigning: compare with the replica list (3).
    (p,) = cluster_rules(Move(TP("orders", 0), (1, 2)), disallow=True)
    assert p.rule == v.REPLICATION_FACTOR_CHANGE and "from 3" in p.detail and "to 2" in p.detail
    # Reassigning: compare with its current target set (2 = [2,3]), as the broker does.
    v.validate_plan(
        Plan.of([Move(TP("orders", 1), (3, 4))]), VIEW, disallow_replication_factor_change=True
    )
    (p,) = cluster_rules(Move(TP("orders", 1), (1, 2, 3)), disallow=True)
    assert p.rule == v.REPLICATION_FACTOR_CHANGE and "in flight" in p.detail
    # Without the flag an RF change is allowed.
    v.validate_plan(Plan.of([Move(TP("orders", 0), (1, 2))]), VIEW)


def test_empty_plan_rejected_by_validate_plan():
    with pytest.raises(InvalidPlanError):
        v.validate_plan(Plan(), VIEW)


# ----------------------------------------------------------------------------- properties

moves_st = st.lists(
    st.builds(
        lambda t, p, rs, dirs: Move(
            TP(t, p),
            tuple(rs),
            tuple(dirs[: len(rs)]) if dirs is not None and len(dirs) >= len(rs) else None,
        ),
        st.sampled_from(["a", "b", "orders.v2", "x_y-z"]),
        st.integers(0, 50),
        st.lists(st.integers(0, 2000), min_size=1, max_size=6, unique=True),
        st.one_of(
            st.none(), st.lists(st.sampled_from(["any", "/d/0", "/d/1"]), min_size=6, max_size=6)
        ),
    ),
    min_size=1,
    max_size=30,
    unique_by=lambda m: m.tp,
)


@given(moves_st)
@settings(max_examples=200, deadline=None)
def test_roundtrip_canonical(moves):
    plan = Plan.of(moves)
    text = plan.to_json(indent=2)
    again = model.parse_plan(text)
    assert again == plan
    assert again.to_json() == plan.to_json()
    assert again.digest() == Plan.of(reversed(moves)).digest()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["version", "partitions", "topic", "partition", "replicas", "log_dirs", "x"]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_any_json_gives_a_plan_or_an_invalid_plan_error(doc):
    try:
        plan = model.parse_plan(json.dumps(doc))
    except InvalidPlanError as e:
        assert e.problems and all(isinstance(p, v.Problem) and p.rule for p in e.problems)
    else:
        assert len(plan) > 0


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_any_text_never_crashes(text):
    try:
        model.parse_plan(text)
    except InvalidPlanError:
        pass


near_valid_entries = st.fixed_dictionaries(
    {},
    optional={
        "topic": st.sampled_from(["a", "", 3, None]),
        "partition": st.sampled_from([0, 2, -1, "1", 1.0, True]),
        "replicas": st.lists(st.sampled_from([1, 2, 3, -1, "2", 2.0]), max_size=4),
        "log_dirs": st.one_of(
            st.none(), st.lists(st.sampled_from(["any", "/d", "d", 5]), max_size=4)
        ),
        "x": st.just(1),
    },
)


@given(near_valid_entries)
@settings(max_examples=500, deadline=None)
def test_fast_path_agrees_with_the_full_rules(entry):
    fast = model._fast_entry(entry)
    full: list[v.Problem] = []
    # A dict subclass is never taken by the fast path: this runs the full rules.
    obj = model._Obj(entry)
    obj.dup_keys = []
    _, move = model._parse_entry(0, obj, full)
    if fast is not None:
        assert not full and move == fast
    else:  # the fast path declined: the full rules found a problem, or accept it the same way
        assert full or move is not None
