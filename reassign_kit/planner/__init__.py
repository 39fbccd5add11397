"""The planner: one pipeline of small passes for both engines (``pipeline``; ``in_process``
here, ``spark.planner`` on Spark), the plan rules (``rules``), rack repair, capacity fit,
leader flow (min-cost flow), the log dirs inside each broker (``dir_plan``, ``dir_balance``:
``--balance disks``, after either engine), the plan's report (``report``) and the record of
what a plan was made from (``record``).

May import: snapshot, cluster (views), validate, model, errors. Names are imported from the
module that defines them."""
