"""Local stand-ins for Kubeflow Trainer's dataset and model initializer images (docs/initializers.md).

``python -m gangplane.initializers dataset|model [--output DIR]`` reads ``STORAGE_URI`` and fills ``DIR``
(upstream's ``/workspace/dataset`` and ``/workspace/model``) from ``file://`` paths or the local Hugging
Face cache (``hf://``), offline. ``sources`` is the pure part (what a URI names, where the cache keeps it);
``fetch`` copies.
"""
