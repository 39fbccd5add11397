"""The adaptive pace: the pure per-broker controller (``controller``), its start ramp
(``ramp``), what it learned across runs (``memory``), its replay on a journal (``replay``), the
produce canary that measures latency (``canary``), and the part of a run that feeds it one
health sample per poll and applies its decisions (``pace``).

May import: moves, eta, cluster (the probe), health, model, errors."""
