"""A cluster snapshot: what the planner and the offline validator know of a cluster
(``snapshot``: JSON and Parquet forms, taken from a live cluster), its entries read strictly
(``entries``) and the topic filters (``filter``); the partitions' load, sampled live
(``sampler``, ``load``) or taken from a metrics history (``history``, ``prom_load``).

May import: cluster (views, to take one), health (``fetch``: one bounded HTTP GET, and
``prom_answer``: a Prometheus answer's envelope, for a server's history), model, errors."""
