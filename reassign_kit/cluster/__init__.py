"""Cluster access: the one place that talks to Kafka (``gateway`` protocol, ``admin`` over
confluent-kafka and kafka-python, ``probe``), the simulator behind the same gateway
(``simulate``, ``simfile``) with the broker quota model it plays (``quota``) and its tick
played event by event (``flows``), client configuration (``config``), capabilities by release
(``capabilities``) and the views the planner and the run read (``views``, ``isr_view``).

May import: health (signals), validate, model, errors; and the Kafka clients."""
