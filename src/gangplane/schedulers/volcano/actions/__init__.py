"""Volcano's actions, one module each, run in the configured order over one session (volcano.md §7)."""
