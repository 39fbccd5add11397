"""Replication throttles: computing what the moves in flight need (``configs``), keeping
them on the cluster for a run (``keeper.ThrottleKeeper``, held by the Run), the operator's own
values saved and put back (``priors``), and cleaning what a dead run left (``janitor``).

May import: moves (the journal, for priors), cluster, model, errors."""
