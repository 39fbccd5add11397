"""A cluster snapshot: what the planner and the offline validator know of a cluster
(``snapshot``: JSON and Parquet forms, taken from a live cluster), its entries read strictly
(``entries``) and the topic filters (``filter``).

May import: cluster (views, to take one), model, errors."""
