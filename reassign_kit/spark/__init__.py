"""Spark side of reassign_kit: session helper, snapshot -> DataFrames, plan generation and plan
validation. Importing this package does not import pyspark; its modules do.

May import: planner, snapshot, moves (the journal, for the postmortem), validate, model."""
