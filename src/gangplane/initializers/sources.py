"""What a storage URI names, and where the local Hugging Face cache keeps a repository (pure: the
environment is passed in).

Hugging Face's cache layout (``huggingface_hub``'s ``file_download``): ``<cache>/<type>s--<org>--<name>/``
holds ``refs/<revision>`` (a file with a commit hash) and ``snapshots/<commit>/`` (the repository's files, as
symlinks into ``blobs/``). ``<cache>`` is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

DATASET, MODEL = "dataset", "model"
# upstream's constants: where each initializer writes (pkg/initializers, DATASET_PATH / MODEL_PATH)
DEFAULT_OUTPUT = {DATASET: "/workspace/dataset", MODEL: "/workspace/model"}
SCHEMES = ("file", "hf")
MODEL_ALLOW = ("*.json", "*.safetensors", "*.model", "*.txt", "*.gguf")  # upstream model/huggingface.py


class SourceError(Exception):
    """The URI cannot be served locally; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class FileSource:
    path: Path


@dataclass(frozen=True, slots=True)
class HubSource:
    repo_id: str  # "org/name" or "name"
    repo_type: str  # DATASET or MODEL
    revision: str = "main"


Source = FileSource | HubSource


def parse(uri: str, kind: str) -> Source:
    """``file:///abs/path`` or ``hf://org/name[@revision]``; anything else is refused with the reason."""
    if not uri:
        raise SourceError(f"STORAGE_URI is empty: set spec.initializer.{kind}.storageUri")
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme not in SCHEMES:
        raise SourceError(
            f"{uri}: unsupported storage URI; the local {kind} initializer reads file:// and hf:// "
            "(S3 and the other upstream providers need the network)"
        )
    if scheme == "file":
        parts = urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            raise SourceError(f"{uri}: a file URI names a path on this host (file:///path)")
        return FileSource(Path(unquote(parts.path)))
    repo, _, revision = rest.strip("/").partition("@")
    segments = [p for p in repo.split("/") if p]
    if kind == DATASET:  # upstream's dataset initializer takes <netloc>/<first path segment> and no more
        segments = segments[:2]
    if not segments or len(segments) > 2:
        raise SourceError(f"{uri}: expected hf://<org>/<name> or hf://<name>")
    return HubSource("/".join(segments), kind, revision or "main")


def patterns(kind: str, environ: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(allow, ignore) globs over repository paths, as upstream's initializers pass them to
    ``snapshot_download``: models keep weights, configs and tokenizers only; ``IGNORE_PATTERNS`` is a comma
    list. (Upstream's model default ignore list never applies: its env reader passes None over it.)"""
    allow = MODEL_ALLOW if kind == MODEL else ()
    ignore = tuple(p.strip() for p in environ.get("IGNORE_PATTERNS", "").split(",") if p.strip())
    return allow, ignore


def selected(path: str, allow: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """huggingface_hub's ``filter_repo_objects``: a pattern ending in ``/`` covers the folder."""

    def hit(pattern: str) -> bool:
        return fnmatch.fnmatch(path, pattern + "*" if pattern.endswith("/") else pattern)

    return (not allow or any(map(hit, allow))) and not any(map(hit, ignore))


def hub_cache(environ: Mapping[str, str], home: Path) -> Path:
    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"]).expanduser()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser() / "hub"
    xdg = Path(environ["XDG_CACHE_HOME"]).expanduser() if environ.get("XDG_CACHE_HOME") else home / ".cache"
    return xdg / "huggingface" / "hub"


def repo_folder(cache: Path, source: HubSource) -> Path:
    return cache / f"{source.repo_type}s--{source.repo_id.replace('/', '--')}"


def download_hint(source: HubSource) -> str:
    return f"hf download --repo-type {source.repo_type} {source.repo_id}"


__all__ = [
    "DATASET",
    "DEFAULT_OUTPUT",
    "MODEL",
    "FileSource",
    "HubSource",
    "Source",
    "SourceError",
    "download_hint",
    "hub_cache",
    "parse",
    "patterns",
    "repo_folder",
    "selected",
]
