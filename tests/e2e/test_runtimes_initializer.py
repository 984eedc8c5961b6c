"""Initializer -> trainer on `gangplane up`: the corrected multi-step example's dataset initializer (the
upstream initializer image, mapped to gangplane's offline initializer) copies a dataset from the local Hugging
Face cache into the shared `initializer` volume, then both trainer nodes read it. The uncorrected runtime
(no `initializer` mount on the initializer container, as upstream's 05-multi-step) is still rejected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from runtimes_harness import Up

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "initializers" / "multi-step.yaml"


def _cache_dataset(hub: Path, repo: str, files: dict[str, str]) -> None:
    """A dataset repository as huggingface_hub leaves it in its cache (blobs, a snapshot of links, refs)."""
    folder = hub / f"datasets--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / "c0ffee"
    for i, (name, text) in enumerate(files.items()):
        blob = folder / "blobs" / f"{i:040x}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_text(text)
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).symlink_to(blob)
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text("c0ffee")


def test_dataset_initializer_fills_the_volume_before_the_trainers_read_it(gangplane_up: Up) -> None:
    rows = '[{"instruction": "Say hi", "input": "", "output": "hi"}]\n'
    _cache_dataset(
        gangplane_up.hf_cache, "tatsu-lab/alpaca", {"README.md": "alpaca\n", "data/train.json": rows}
    )
    ran = gangplane_up.run_job(EXAMPLE)
    assert "trainjob/multi-step-example Complete" in ran.stdout, ran.stdout + ran.stderr
    logs = gangplane_up.gp("logs", "trainjob/multi-step-example").stdout
    assert "dataset initializer: 2 files from hf://tatsu-lab/alpaca" in logs
    ready = sorted(set(re.findall(r"node \d: dataset ready .*", logs)))
    assert ready == [f"node {i}: dataset ready (2 files: README.md, data/train.json)" for i in (0, 1)]


def test_runtime_without_the_initializer_mount_is_rejected(gangplane_up: Up, tmp_path: Path) -> None:
    claim, runtime, job = yaml.safe_load_all(EXAMPLE.read_text())
    runtime["metadata"]["name"] = "no-initializer-mount"
    init = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    del init["containers"][0]["volumeMounts"]
    job["metadata"]["name"] = "rejected-multi-step"
    job["spec"]["runtimeRef"]["name"] = "no-initializer-mount"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all([claim, runtime, job]))
    applied = gangplane_up.gp("apply", "-f", str(tmp_path / "bad.yaml"), check=False)
    assert applied.returncode != 0
    assert "has no volume mount named 'initializer'" in applied.stdout + applied.stderr
