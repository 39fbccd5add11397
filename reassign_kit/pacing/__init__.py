"""The adaptive pace's pure parts: the per-broker controller (``controller``), its start ramp
(``ramp``), what it learned across runs (``memory``), its replay on a journal (``replay``) and
whether the moves copy at their rates, from the run's progress bytes (``copying``).
The part of a run that feeds it one health sample per poll and applies its decisions is
``run.pace``, with the probe's canary topics in ``run.canary``.

May import: cluster (the quota windows), health, model, errors."""
