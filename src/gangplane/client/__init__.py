"""Talking to an API server: the in-process store or a remote Kubernetes API, behind the ``Store`` protocol,
plus the informer, work queue and controller loop every reconciler and scheduler shell is built on."""
