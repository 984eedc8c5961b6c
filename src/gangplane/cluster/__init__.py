"""The embedded cluster: one process holding the store, the API server, the controllers, the schedulers and
the node agents (what ``gangplane up`` starts)."""
