"""gangplane: Kubeflow Trainer's job scheduling in Python — gang scheduling, queues, an embedded control plane."""

__version__ = "0.1.0"

__all__ = ["__version__"]
