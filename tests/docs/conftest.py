"""After the docs harness ran the pages, list the shell blocks it did not run, so that omissions stay visible
(real-cluster sections, files the reader provides, ``make`` targets CI runs on its own)."""

from __future__ import annotations

import pytest
from docblocks import unmarked

_PAGE_TEST = "tests/docs/test_docs.py::test_page_runs_as_written"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ran = ("passed", "failed", "skipped", "error")
    reports = [r for outcome in ran for r in terminalreporter.stats.get(outcome, [])]
    if not any(getattr(r, "nodeid", "").startswith(_PAGE_TEST) for r in reports):
        return
    left = unmarked()
    terminalreporter.section(f"docs: {len(left)} shell blocks not marked runnable")
    for block in left:
        terminalreporter.write_line(f"{block.page}:{block.line}  {block.first_command[:80]}")
