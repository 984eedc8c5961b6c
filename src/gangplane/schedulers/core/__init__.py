"""The shared scheduling core: snapshots with assume/rollback, vectorised fit, gang placement, scoring and
preemption victim search. Pure: no store, no clock reads, deterministic for a given input."""
