"""Cluster access: what the engine and the operations read from the cluster, in one place."""
