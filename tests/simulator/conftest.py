"""Fixtures for the simulator tests: the reference traces in ``shared/traces`` (skipped when absent) and a
CLI app with ``simulate``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer

from gangplane.cli import simulate

_REPO = Path(__file__).resolve().parents[2]


def find_traces() -> Path | None:
    """``$GANGPLANE_SHARED/traces``, else ``<repo>/shared/traces``, else ``<repo>/../shared/traces``."""
    env = os.environ.get("GANGPLANE_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [_REPO / "shared", _REPO.parent / "shared"]
    return next((c / "traces" for c in candidates if (c / "traces").is_dir()), None)


def _trace(name: str) -> Path:
    folder = find_traces()
    if folder is None or not (folder / name).is_file():
        pytest.skip(f"reference trace {name} not found (set GANGPLANE_SHARED to the folder holding traces/)")
    return folder / name


@pytest.fixture(scope="session")
def tiresias_csv() -> Path:
    return _trace("tiresias_60_job.csv")


@pytest.fixture(scope="session")
def philly_csv() -> Path:
    return _trace("philly_pollux.csv")


@pytest.fixture
def app() -> typer.Typer:
    """A Typer app with only ``simulate`` registered."""
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root."""

    simulate.register(app)
    return app
