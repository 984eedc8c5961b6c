"""Wire types and pure rules of the APIs gangplane speaks; no I/O."""
