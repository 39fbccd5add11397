"""The one-shot operations the service (``api``) exposes: the official tool's single
``--execute`` request, the connection and ``--list`` (``execute``), ``--verify`` (``verify``),
cancel as rollback (``cancel``), where each partition ended after a cancel (``outcome``), and
the result tables' small pieces (``tables``).

May import: run (rollback, elections, preflight, log dirs), throttles, pacing (memory),
planner (record), moves, cluster, model, errors."""
