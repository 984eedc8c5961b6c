"""Copying a source into the initializer's output directory (the shell around ``sources``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from gangplane.initializers.sources import (
    FileSource,
    HubSource,
    Source,
    SourceError,
    download_hint,
    hub_cache,
    patterns,
    repo_folder,
    selected,
)

Say = Callable[[str], None]


def fetch(source: Source, output: Path, environ: Mapping[str, str], say: Say = print) -> int:
    """Copy ``source`` into ``output`` (created; files already there are overwritten); the number of files."""
    origin = _file(source) if isinstance(source, FileSource) else snapshot(source, environ)
    if not output.parent.is_dir():  # never create a stray /workspace on the host: the volume must be there
        raise SourceError(
            f"{output.parent} does not exist: mount the 'initializer' volume at or above {output}"
        )
    output.mkdir(exist_ok=True)
    say(f"copying {origin} into {output}")
    if origin.is_file():
        shutil.copy2(origin, output / origin.name)
        return 1
    allow, ignore = patterns(source.repo_type, environ) if isinstance(source, HubSource) else ((), ())
    count = 0
    for path in sorted(p for p in origin.rglob("*") if p.is_file()):  # snapshot symlinks resolve to blobs
        relative = path.relative_to(origin).as_posix()
        if relative.startswith(".git/") or not selected(relative, allow, ignore):
            continue
        (output / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, output / relative)
        count += 1
    return count


def _file(source: FileSource) -> Path:
    if not source.path.is_absolute():
        raise SourceError(f"file://{source.path}: the path must be absolute (file:///path)")
    if not source.path.exists():
        raise SourceError(f"file://{source.path}: no such file or directory on this host")
    return source.path


def snapshot(source: HubSource, environ: Mapping[str, str]) -> Path:
    """The cached snapshot of ``source`` (offline: the hub is never asked)."""
    cache = hub_cache(environ, Path.home())
    folder = repo_folder(cache, source)
    ref = folder / "refs" / source.revision
    commit = ref.read_text().strip() if ref.is_file() else source.revision
    found = folder / "snapshots" / commit
    if not found.is_dir():
        raise SourceError(
            f"hf://{source.repo_id}: {source.repo_type} repository {source.repo_id!r} (revision "
            f"{source.revision}) is not in the local Hugging Face cache ({folder}); gangplane's initializer "
            f"works offline (HF_HUB_OFFLINE=1): download it where the hub is reachable "
            f"(`{download_hint(source)}`) or point HF_HOME / HF_HUB_CACHE at a cache that has it"
        )
    return found


__all__ = ["fetch", "snapshot"]
