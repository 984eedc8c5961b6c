"""Where the embedded control plane keeps its state (kubeconfig, token, SQLite, logs): ``$GANGPLANE_HOME``,
else ``~/.gangplane``. A module of its own so the CLI finds the kubeconfig without loading the server."""

from __future__ import annotations

import os
from pathlib import Path


def default_state_dir() -> Path:
    home = os.environ.get("GANGPLANE_HOME")
    return Path(home).expanduser() if home else Path.home() / ".gangplane"


__all__ = ["default_state_dir"]
