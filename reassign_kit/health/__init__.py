"""Broker health for adaptive pacing: what a health source measured, from a metrics
stack (a Prometheus server or the brokers' JMX exporters) or from the tool's own probe.

``signals`` is pure data; the sources that fetch it live beside it (HTTP) or, for the probe that
produces to Kafka, in ``reassign_kit.cluster``. May import: model, errors.
"""
