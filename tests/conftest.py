"""Shared test setup: puts tests/ on sys.path so helpers (``import crdschema``) import in any import mode, and
picks the hypothesis profile.

Hypothesis profiles: ``ci`` (chosen when ``CI=true``) derandomizes, so a CI run is reproducible from the commit
alone, and keeps no example database; ``dev`` (everywhere else) draws fresh random examples each run, twice as
many for the properties that do not set their own count, and replays earlier failures from the local database.
``HYPOTHESIS_PROFILE`` overrides the choice. Neither has a deadline: a loaded 2-core machine is not a bug.
"""

import os
import sys
from pathlib import Path

from hypothesis import settings

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=200, deadline=None)
# Informers share the store's dicts; in tests they cache frozen copies so any in-place edit raises
# (client/readonly.py). Set here so the control planes the end-to-end tests start inherit it.
os.environ.setdefault("GANGPLANE_CHECK_SHARED", "1")

_IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _IN_CI else "dev"))
