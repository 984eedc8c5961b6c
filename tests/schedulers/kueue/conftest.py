"""Upstream-table harnesses assert inside helper modules: have pytest rewrite their asserts too."""

import pytest

pytest.register_assert_rewrite("upstream_schedule")
