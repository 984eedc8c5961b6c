"""Docs are tests (tests/docs/runbook.py): the harness's parsing and running, the pages' coverage, and each
page with runnable blocks run as written on its own embedded cluster (slow)."""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import runbook
from docblocks import REPO, Block, blocks, runnable_pages, steps, unmarked
from runbook import DocsFailure, missing_needs, run_page

INTEGRATION_PAGES = ("coscheduling", "volcano", "kai", "kueue", "slurm")
FENCE = "```"
PARALLEL = int(os.environ.get("GANGPLANE_DOCS_PARALLEL", "3"))


def _page(tmp_path: Path, body: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(body.replace("'''", FENCE))
    return page


def test_blocks_read_language_marker_and_prerequisites(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "# T\n\n'''sh runnable needs=slurm\necho a\n'''\n\n'''console\n$ x\n'''\n\n'''yaml\na: 1\n'''\n",
    )
    found = blocks(page, tmp_path)
    assert [(b.lang, b.runnable, b.needs, b.line) for b in found] == [
        ("sh", True, ("slurm",), 3),
        ("console", False, (), 7),
        ("yaml", False, (), 11),
    ]
    assert found[0].text == "echo a"


def test_steps_join_continuations_and_heredocs_and_attach_expectations() -> None:
    text = (
        "# a comment\n"
        "cat > f <<'YAML'\nk: v\n# not an expectation\nYAML\n"
        "# expect: ^$\n"
        "echo one \\\n  two\n"
        "# eventually: one two\n"
        "# expect: two\n"
        "\n"
        "ls  # trailing comment\n"
    )
    parsed = steps(Block("p.md", 10, "sh", ("runnable",), text))
    assert [s.command for s in parsed] == [
        "cat > f <<'YAML'\nk: v\n# not an expectation\nYAML",
        "echo one \\\n  two",
        "ls  # trailing comment",
    ]
    assert [s.line for s in parsed] == [12, 17, 22]
    assert [(e.kind, e.pattern, e.line) for e in parsed[1].expects] == [
        ("eventually", "one two", 19),
        ("expect", "two", 20),
    ]
    assert parsed[0].expects[0].pattern == "^$"


def test_an_expectation_before_any_command_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"p\.md:2: an expectation before any command"):
        steps(Block("p.md", 1, "sh", ("runnable",), "# expect: x\necho"))


def test_a_page_runs_in_one_shell_and_checks_expectations(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "'''sh runnable\nexport GREETING=hi\ncd /\n'''\n\ntext\n\n'''sh runnable\n"
        "echo $GREETING from $(pwd) && echo to-stderr >&2\n# expect: ^hi from /$\n# expect: to-stderr\n"
        "n=$(cat ~/n 2>/dev/null || echo 0); echo $((n + 1)) > ~/n; cat ~/n\n# eventually: ^3$\n"
        "test -d ~/.gangplane || test \"$GANGPLANE_HOME\" = ~/.gangplane\n'''\n",
    )
    transcript = run_page(page, tmp_path / "scratch", root=tmp_path)
    assert len(transcript) == 5
    assert (tmp_path / "scratch" / "home" / "n").read_text() == "3\n"


def test_a_failing_command_fails_the_page_with_its_line_and_output(tmp_path: Path) -> None:
    page = _page(tmp_path, "'''sh runnable\necho fine\necho broken; false\necho never\n'''\n")
    with pytest.raises(DocsFailure, match=r"page.md:3: `echo broken; false` exited 1\n  \| broken"):
        run_page(page, tmp_path / "scratch", root=tmp_path)


def test_a_pipeline_fails_when_any_part_fails(tmp_path: Path) -> None:
    page = _page(tmp_path, "'''sh runnable\nfalse | cat\n'''\n")
    with pytest.raises(DocsFailure, match="exited 1"):
        run_page(page, tmp_path / "scratch", root=tmp_path)


def test_an_expectation_that_does_not_hold_fails_the_page(tmp_path: Path) -> None:
    page = _page(tmp_path, "'''sh runnable\necho waiting\n# expect: running\n'''\n")
    with pytest.raises(DocsFailure, match=r"page.md:2: `echo waiting`: output never matched /running/"):
        run_page(page, tmp_path / "scratch", root=tmp_path)


def test_an_eventual_state_that_never_comes_fails_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runbook.EVENTUALLY_S", 1.5)
    page = _page(tmp_path, "'''sh runnable\necho pending\n# eventually: Complete\n'''\n")
    with pytest.raises(DocsFailure, match=r"never matched within 2 s /Complete/"):
        run_page(page, tmp_path / "scratch", root=tmp_path)


def test_unmarked_and_example_blocks_are_not_run(tmp_path: Path) -> None:
    page = _page(tmp_path, "'''sh\nfalse\n'''\n'''yaml\nfalse\n'''\n'''sh runnable\ntrue\n'''\n")
    assert len(run_page(page, tmp_path / "scratch", root=tmp_path)) == 1


def test_a_block_whose_prerequisite_is_missing_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(runbook._NEEDS, "slurm", lambda: "Slurm is not installed")
    page = _page(tmp_path, "'''sh runnable needs=slurm\nfalse\n'''\n'''sh runnable\ntrue\n'''\n")
    transcript = run_page(page, tmp_path / "scratch", root=tmp_path)
    assert transcript[0] == "skipped page.md:1: Slurm is not installed"
    assert len(transcript) == 2
    assert missing_needs(page, tmp_path) is None
    only = _page(tmp_path, "'''sh runnable needs=slurm\nfalse\n'''\n")
    assert missing_needs(only, tmp_path) == "page.md:1: Slurm is not installed"


def test_an_unknown_prerequisite_is_an_error(tmp_path: Path) -> None:
    page = _page(tmp_path, "'''sh runnable needs=slrum\ntrue\n'''\n")
    with pytest.raises(ValueError, match="unknown prerequisite needs=slrum"):
        run_page(page, tmp_path / "scratch", root=tmp_path)


def test_every_integration_page_has_a_runnable_local_walkthrough() -> None:
    for name in INTEGRATION_PAGES:
        page = REPO / "docs" / f"{name}.md"
        text = page.read_text()
        assert "\n## Local walkthrough" in text, f"{page.name} has no '## Local walkthrough' section"
        section = text.split("\n## Local walkthrough", 1)[1].split("\n## ", 1)[0]
        assert f"{FENCE}sh runnable" in section, f"{page.name}: its local walkthrough has no runnable block"


def test_every_page_with_a_local_how_to_section_has_a_runnable_block() -> None:
    """A section that tells how to run something locally shows it with commands the harness runs."""
    how_to = re.compile(
        r"^#+ .*(local walkthrough|running locally|run locally|quick start|tour)", re.I | re.M
    )
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        headings = how_to.findall(page.read_text())
        if headings:
            assert any(b.runnable for b in blocks(page)), f"{page.name}: {headings} but no runnable block"


def test_unmarked_shell_blocks_are_listed() -> None:
    listed = unmarked()
    assert all(not b.runnable and b.lang in ("sh", "bash", "shell", "console", "zsh") for b in listed)
    assert any(b.page == "docs/slurm.md" and "install.sh" in b.text for b in listed)  # needs root and apt


@dataclass
class PageOutcome:
    skipped: str | None = None
    failure: BaseException | None = None


def _run(page: Path, scratch: Path) -> PageOutcome:
    why = missing_needs(page)
    if why:
        return PageOutcome(skipped=why)
    try:
        run_page(page, scratch)
    except (DocsFailure, ValueError, OSError, subprocess.SubprocessError) as exc:
        return PageOutcome(failure=exc)
    return PageOutcome()


@pytest.fixture(scope="session")
def page_outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[Path, PageOutcome]:
    """Every selected page, run PARALLEL at a time (each has its own cluster, ports and directories): most of a
    page's time is spent waiting on its cluster, so pages overlap well."""
    chosen = [
        item.callspec.params["page"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_page_runs_as_written"
    ]
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        futures = {page: pool.submit(_run, page, tmp_path_factory.mktemp(page.stem)) for page in chosen}
    return {page: future.result() for page, future in futures.items()}


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_runs_as_written(page: Path, page_outcomes: dict[Path, PageOutcome]) -> None:
    outcome = page_outcomes[page]
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    if outcome.failure is not None:
        raise outcome.failure
