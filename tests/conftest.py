"""Shared test setup: puts tests/ on sys.path so helpers (``import crdschema``) import in any import mode."""

import sys
from pathlib import Path

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)
