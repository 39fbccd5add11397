"""Where a run is reported outside the process: Prometheus metrics (``metrics``: a /metrics
listener and a textfile) and webhook notifications (``notify``). Each listens to a run's events;
neither imports the run. May import: errors."""
