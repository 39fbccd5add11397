"""The paced run: ``run.Run`` and the parts it is made of, and what starts, resumes and ends it.

Owns: the run's control (``run``), its start (``begin``), one poll (``loop``), submissions with
their write-ahead originals (``submit``), each move's progress (``track``), the way back
(``rollback``), the end on every path (``finish``), the run's state by one transition table
(``lifecycle``), the checks before anything is sent (``preflight``), bounded retries
(``retry``), preferred-leader elections (``elections``), log-dir moves (``logdirs``), deadlines,
resuming from a journal (``resume``), the options of a run (``options``, ``option_spec``,
``options_validate``) and the run's home in the state directory (``home``).

May import: throttles, pacing, watch, planner (the plan record), eta, moves, snapshot,
cluster, health and below. Front ends reach it through ``api``."""
