"""Embedded schedulers: pure scheduling cores over cluster snapshots, and thin loop shells that bind pods."""
