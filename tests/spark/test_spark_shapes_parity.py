"""One pipeline, two engines: the Spark job and the in-process engine run the same
passes (``planner.pipeline``), so they give the same plan, the same lower bound and the same
report on snapshots of every shape the suite plans: rebalance, decommission (one rack and two),
rack repair, demotion, cordons (avoided and drained), capacity limits and the bytes goal, an RF
change (tests/plan_shapes.py)."""

from __future__ import annotations

import pytest
from plan_shapes import shapes

from reassign_kit.errors import CapacityError
from reassign_kit.planner.in_process import plan_in_process
from reassign_kit.spark.planner import plan_spark

pytestmark = pytest.mark.spark

SHAPES = shapes()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_both_engines_give_the_same_plan(spark, name):
    snap, params = SHAPES[name]()
    try:
        local = plan_in_process(snap, params)
    except CapacityError as e:  # a refusal is a result too: the same one on Spark
        with pytest.raises(CapacityError) as on_spark:
            plan_spark(spark, snap, params)
        assert str(on_spark.value) == str(e)
        return
    result = plan_spark(spark, snap, params)
    assert result.plan == local.plan
    assert result.plan.digest() == local.plan.digest()
    assert result.moved_replicas == local.moved_replicas
    assert result.lower_bound == local.lower_bound
    mine, theirs = result.report(), local.report()
    for key in ("rack_repair", "leader_balance", "bytes_goal"):
        assert mine.get(key) == theirs.get(key), key
