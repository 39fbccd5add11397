"""One Spark session for the whole test run: local[2], two shuffle partitions, UI off."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from reassign_kit.spark.session import get_spark, stop_spark

    session = get_spark("local[2]", shuffle_partitions=2)
    yield session
    stop_spark()
