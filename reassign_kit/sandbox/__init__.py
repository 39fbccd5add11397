"""A real local Kafka for demos, rehearsal and tests, split by job: the cluster and its
lifecycle (``sandbox.Sandbox``), refusals and the files written before a start (``create``),
each node's config files (``config_files``), its distinct loopback ports (``ports``), the
processes (``processes``), the state file
(``state``), ZooKeeper at run time (``zookeeper``), the admin clients it uses (``clients``),
topics and load (``topics``), the jars and the release's quirks (``kafka``), the JMX exporter
agent (``metrics``) and TLS/SASL material (``security``).

Development tooling: by a stated exception it may import the Kafka clients; only the CLI's
``sandbox`` command, the runbooks, the demo and the tests import it."""
