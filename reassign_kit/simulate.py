"""``reassign_kit.simulate.SimCluster``: the public what-if model (a simulated cluster behind the
same gateway contract as the real one). It lives in ``reassign_kit.cluster.simulate``."""

from .cluster.simulate import *  # noqa: F403
from .cluster.simulate import SimCluster

__all__ = ["SimCluster"]
