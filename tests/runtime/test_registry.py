"""Plugin contracts: a plugin that does not match the extension points it is registered at is rejected by the
type checker and, again, by the registry when it is built (at import of ``runtime.plugins`` for the in-tree
ones), never later by a ``TypeError`` inside ``render`` or a phase silently not called."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gangplane.api.trainer import TrainJob
from gangplane.clock import ManualClock
from gangplane.registry import NamedRegistry
from gangplane.runtime import points
from gangplane.runtime.framework import Framework
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins import ENTRIES
from gangplane.runtime.registry import PluginContractError, Registry, plugin

FIXTURE = Path(__file__).parent / "fixtures" / "bad_plugins.py"


def _load_fixture() -> Any:
    spec = importlib.util.spec_from_file_location("bad_plugins", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_wrong_arity_fails_the_registry() -> None:
    fixture = _load_fixture()
    with pytest.raises(
        PluginContractError, match=r"build\(info, job\) does not match BuildPlugin.build\(info, job, reader\)"
    ):
        Registry([fixture.WRONG_ARITY])


def test_a_misspelled_extension_point_fails_the_registry() -> None:
    fixture = _load_fixture()
    with pytest.raises(PluginContractError, match="registered at 'enforce_ml_policy' but has no such method"):
        Registry([fixture.MISSPELT])
    unregistered = plugin(fixture.Misspelt.name, fixture.Misspelt).at()
    with pytest.raises(PluginContractError, match="did you mean 'enforce_ml_policy'"):
        Registry([unregistered])


class Undeclared:
    """Implements ``pre_build`` without being registered at it: the phase would never be called."""

    name: ClassVar[str] = "Undeclared"

    def __init__(self, handle: points.Handle) -> None: ...

    def pre_build(self, info: RuntimeInfo, job: TrainJob) -> None: ...


def test_an_undeclared_extension_point_fails_the_registry() -> None:
    with pytest.raises(PluginContractError, match="implements 'pre_build' but is not registered at it"):
        Registry([plugin(Undeclared.name, Undeclared).at()])


def test_a_plugin_built_by_a_function_is_checked_on_its_instance() -> None:
    entry = plugin("Undeclared", lambda handle: Undeclared(handle)).at()
    registry = Registry([entry])  # nothing to inspect before it is built
    with pytest.raises(PluginContractError, match="not registered at it"):
        Framework(registry, points.Handle(ManualClock()))


def test_the_in_tree_entries_pass_and_share_the_generic_registry() -> None:
    assert isinstance(Registry(list(ENTRIES)), NamedRegistry)
    assert [e.name for e in ENTRIES][-1] == "TrainJobStatus"


@pytest.mark.slow
def test_strict_mypy_rejects_each_bad_registration() -> None:
    api = pytest.importorskip("mypy.api")
    out, _, status = api.run(["--strict", "--no-error-summary", "--follow-imports=silent", str(FIXTURE)])
    errors = [line for line in out.splitlines() if ": error:" in line]
    lines = FIXTURE.read_text().splitlines()
    flagged = {int(e.split(":")[1]) for e in errors}
    expected = {n for n, text in enumerate(lines, 1) if "# error:" in text}
    assert status == 1 and flagged == expected, out
    assert all('incompatible type "Phase[' in e for e in errors), out
