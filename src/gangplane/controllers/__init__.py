"""Reconcilers: TrainJob, JobSet, Job and PodGroup status, each a level-based loop over the ``Store``
protocol, so the same code runs in the embedded cluster and against a real API server."""
