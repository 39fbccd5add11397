"""The engine: pacing (KIP-1335), KIP-435 steps, throttles (KIP-179/73), the run loop, its
journal and the progress report. Everything here reaches Kafka through a gateway only, so
the same code runs against a real cluster and against ``simulate.SimCluster``."""
