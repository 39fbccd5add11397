"""The ETA of a paced run and the model behind it: what is left, simulated at both ends of
every copy (``model``, ``estimate.RunEta``), the rates and windows it reads (``ends``,
``share``, ``gaps``, ``lag``, ``pace``) and what Kafka's replication quota does to the streams
(``quota_effects``). The quota model itself is ``cluster.quota``: the simulator, a cluster
gateway, plays it too, and the cluster layer lies below this one.

Pure: may import moves, cluster.quota, model, errors."""
