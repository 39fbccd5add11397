"""The ETA of a paced run and the model behind it: what is left, simulated at both ends of
every copy (``model``, ``estimate.RunEta``; the what-if's makespan is the same model of a
whole plan, ``model.forecast``), starting from the physical bound
(``model.physical_bound``) with the terms that earned their keep on held-out shapes, the
rates and windows it reads (``ends``, ``share``, ``lag``, ``pace``) and what Kafka's
replication quota does to the streams (``quota_effects``). The quota model itself is ``cluster.quota``: the simulator, a cluster
gateway, plays it too, and the cluster layer lies below this one.

Pure: may import moves, cluster.quota, model, errors."""
