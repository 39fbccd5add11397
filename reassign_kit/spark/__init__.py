"""Spark side of reassign_kit: session helper, snapshot -> DataFrames, plan generation and plan
validation. Importing this package does not import pyspark; its modules do."""
