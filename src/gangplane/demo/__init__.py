"""Workloads for ``make demo`` and the end-to-end tests: small but real distributed training scripts.

They import only PyTorch (installed by ``make demo``), never the rest of gangplane, so a pod's process
runs them exactly as it would run a user's script."""
