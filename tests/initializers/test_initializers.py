"""The local dataset/model initializers: URI parsing, the Hugging Face cache layout, copying, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gangplane.initializers.__main__ import main
from gangplane.initializers.fetch import fetch, snapshot
from gangplane.initializers.sources import (
    FileSource,
    HubSource,
    SourceError,
    hub_cache,
    parse,
    patterns,
    repo_folder,
    selected,
)


@pytest.mark.parametrize(
    ("uri", "kind", "source"),
    [
        ("file:///data/set", "dataset", FileSource(Path("/data/set"))),
        ("file://localhost/data/a%20b", "dataset", FileSource(Path("/data/a b"))),
        ("hf://tatsu-lab/alpaca", "dataset", HubSource("tatsu-lab/alpaca", "dataset")),
        ("hf://gpt2", "model", HubSource("gpt2", "model")),
        ("hf://org/name@v1.0", "model", HubSource("org/name", "model", "v1.0")),
        ("hf://tatsu-lab/alpaca/data", "dataset", HubSource("tatsu-lab/alpaca", "dataset")),
    ],
)
def test_parse(uri: str, kind: str, source: object) -> None:
    assert parse(uri, kind) == source


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("", "STORAGE_URI is empty"),
        ("s3://bucket/x", "unsupported storage URI"),
        ("/plain/path", "unsupported storage URI"),
        ("file://otherhost/x", "a path on this host"),
        ("hf://", "expected hf://"),
    ],
)
def test_parse_refuses(uri: str, problem: str) -> None:
    with pytest.raises(SourceError, match=problem):
        parse(uri, "dataset")


def test_model_uri_is_the_whole_path() -> None:
    with pytest.raises(SourceError, match="expected hf://"):
        parse("hf://a/b/c", "model")


@pytest.mark.parametrize(
    ("path", "kind", "env", "kept"),
    [
        ("model.safetensors", "model", {}, True),
        ("pytorch_model.bin", "model", {}, False),  # not in upstream's allow list
        ("original/tokenizer.model", "model", {}, True),
        ("config.json", "model", {"IGNORE_PATTERNS": "*.json, *.txt"}, False),
        ("data/train.parquet", "dataset", {}, True),
        ("data/train.parquet", "dataset", {"IGNORE_PATTERNS": "data/"}, False),
    ],
)
def test_patterns_follow_upstream(path: str, kind: str, env: dict[str, str], kept: bool) -> None:
    assert selected(path, *patterns(kind, env)) is kept


def test_hub_cache_precedence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert hub_cache({}, home) == home / ".cache/huggingface/hub"
    assert hub_cache({"XDG_CACHE_HOME": "/x"}, home) == Path("/x/huggingface/hub")
    assert hub_cache({"XDG_CACHE_HOME": "/x", "HF_HOME": "/h"}, home) == Path("/h/hub")
    assert hub_cache({"HF_HOME": "/h", "HF_HUB_CACHE": "/c"}, home) == Path("/c")


def cached_repo(cache: Path, source: HubSource, files: dict[str, str]) -> None:
    """A repository laid out as huggingface_hub caches it: blobs, a snapshot of symlinks, refs/main."""
    folder, commit = repo_folder(cache, source), "0123abcd"
    for i, (name, text) in enumerate(files.items()):
        blob = folder / "blobs" / f"blob{i}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_text(text)
        link = folder / "snapshots" / commit / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(blob)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)


def test_hf_copies_the_cached_snapshot_as_files(tmp_path: Path) -> None:
    source = HubSource("tatsu-lab/alpaca", "dataset")
    cached_repo(tmp_path / "hub", source, {"data/train.jsonl": '{"x": 1}\n', "README.md": "alpaca"})
    out = tmp_path / "workspace" / "dataset"
    out.parent.mkdir()
    assert fetch(source, out, {"HF_HUB_CACHE": str(tmp_path / "hub")}, say=lambda _: None) == 2
    assert (out / "data" / "train.jsonl").read_text() == '{"x": 1}\n'
    assert not (out / "README.md").is_symlink()


def test_hf_missing_repo_names_it_and_says_how_to_get_it(tmp_path: Path) -> None:
    source = HubSource("meta-llama/Llama-3.2-1B-Instruct", "model")
    with pytest.raises(SourceError) as err:
        snapshot(source, {"HF_HOME": str(tmp_path)})
    text = str(err.value)
    assert "'meta-llama/Llama-3.2-1B-Instruct'" in text and "not in the local Hugging Face cache" in text
    assert "hf download --repo-type model meta-llama/Llama-3.2-1B-Instruct" in text


def test_file_sources_copy_a_directory_or_a_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.txt").write_text("a")
    (tmp_path / "one.csv").write_text("1,2\n")
    out = tmp_path / "out"
    assert fetch(FileSource(src), out, {}, say=lambda _: None) == 1
    assert (out / "sub" / "a.txt").read_text() == "a"
    fetch(FileSource(tmp_path / "one.csv"), out, {}, say=lambda _: None)
    assert (out / "one.csv").read_text() == "1,2\n"
    with pytest.raises(SourceError, match="no such file"):
        fetch(FileSource(tmp_path / "nope"), out, {}, say=lambda _: None)


def test_output_needs_the_volume_there(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="mount the 'initializer' volume"):
        fetch(FileSource(tmp_path), tmp_path / "no" / "dataset", {}, say=lambda _: None)


def test_main_reads_storage_uri_and_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    monkeypatch.setenv("STORAGE_URI", f"file://{tmp_path / 'd'}")
    assert main(["dataset", "--output", str(tmp_path / "out")]) == 0
    assert "dataset initializer: 1 file from" in capsys.readouterr().out
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert main(["model", "--storage-uri", "hf://org/m", "--output", str(tmp_path / "m")]) == 1
    assert "model repository 'org/m'" in capsys.readouterr().err
