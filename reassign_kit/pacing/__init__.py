"""The adaptive pace's pure parts: the per-broker controller (``controller``), its start ramp
(``ramp``), what it learned across runs (``memory``) and its replay on a journal (``replay``).
The part of a run that feeds it one health sample per poll and applies its decisions is
``run.pace``, with the probe's canary topics in ``run.canary``.

May import: cluster (the quota windows), health, model, errors."""
