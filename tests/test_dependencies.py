"""Declared dependencies match imports: every third-party module ``src/gangplane`` imports comes from a
distribution pyproject.toml declares (base, or the extra whose feature imports it), and each extra's modules
are imported only where that feature lives."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "gangplane"
# Modules an optional extra provides -> the only places that may import them.
EXTRA_ONLY = {"matplotlib": "gangplane/simulator/plots.py", "torch": "gangplane/demo/"}


def _imports() -> dict[str, set[str]]:
    """Top-level imported module -> files importing it (absolute imports outside gangplane)."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top != "gangplane" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(SRC.parent)))
    return found


def _declared() -> dict[str, str]:
    """Normalised distribution name -> where it is declared (``base`` or the extra's name)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = {"base": project["dependencies"], **project["optional-dependencies"]}
    name = re.compile(r"^[A-Za-z0-9._-]+")
    return {
        _norm(m.group(0)): group for group, reqs in groups.items() for req in reqs if (m := name.match(req))
    }


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def test_every_imported_distribution_is_declared_where_it_is_used() -> None:
    declared, dists = _declared(), packages_distributions()
    for module, files in sorted(_imports().items()):
        owners = {_norm(d) for d in dists.get(module, [module])}
        where = {declared[d] for d in owners if d in declared}
        assert where, (
            f"{module} (imported by {sorted(files)}) comes from {owners}, which pyproject.toml lacks"
        )
        if where == {"base"}:
            continue
        allowed = EXTRA_ONLY.get(module)
        assert allowed is not None and all(f.startswith(allowed) for f in files), (module, where, files)
