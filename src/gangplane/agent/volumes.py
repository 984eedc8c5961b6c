"""Pod volumes on this host: what each volume holds (pure) and writing it into the pod's sandbox.

| volume | backed by |
|---|---|
| ``emptyDir`` | ``<sandbox>/volumes/<name>``, removed with the pod's sandbox (``medium: Memory``: in memory) |
| ``configMap`` / ``downwardAPI`` | files in ``<sandbox>/volumes/<name>`` (below) |
| ``secret`` / ``projected`` | the same files in the pod's memory directory (``sandbox.MemoryRoot``) |
| ``hostPath`` | the host path itself (``DirectoryOrCreate`` / ``FileOrCreate`` create it) |
| ``persistentVolumeClaim`` | the bound PersistentVolume's ``hostPath``/``local`` path (``claimed_source``) |
| the service-account token | ``serviceaccount`` in the pod's memory directory (``sandbox.MemoryRoot``) |

Projected files are written as the kubelet's ``AtomicWriter`` does (a timestamped directory swapped in
through the ``..data`` symlink), refreshed each time a container of the pod starts and every minute while
it runs (only when the content changed). File modes follow
``defaultMode``/``items[].mode``; a Secret's files default to 0600 (Kubernetes uses 0644; the stricter mode
keeps other local users out, since the sandbox is on the host). A missing ConfigMap or Secret (not
``optional``) or key raises ``ConfigError``, so the container waits as the kubelet's does.
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gangplane.agent.env import ConfigError, ObjectReader, field_value, resource_value
from gangplane.agent.sandbox import Mount

Files = dict[str, tuple[bytes, int]]  # relative path -> (content, mode)
TokenSource = Callable[[str], str]  # audience ("" for the API server's) -> the pod's service-account token
CONFIGMAP_MODE, SECRET_MODE = 0o644, 0o600
_PROJECTIONS = ("configMap", "secret", "downwardAPI", "projected")
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_VOLUME = (
    "<service-account>"  # the token volume's key (service_account.py): never a user's name
)


def _decoded(values: Mapping[str, Any], what: str) -> dict[str, bytes]:
    out = {}
    for key, value in values.items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True)
        except binascii.Error as err:
            raise ConfigError(f"{what} key {key!r} is not base64: {err}") from err
    return out


def _object_bytes(kind: str, obj: Mapping[str, Any]) -> dict[str, bytes]:
    if kind == "secret":
        data = _decoded(obj.get("data") or {}, "secret")
        return data | {str(k): str(v).encode() for k, v in (obj.get("stringData") or {}).items()}
    text = {str(k): str(v).encode() for k, v in (obj.get("data") or {}).items()}
    return text | _decoded(obj.get("binaryData") or {}, "configmap")


def keyed_files(kind: str, source: Mapping[str, Any], namespace: str, read: ObjectReader, mode: int) -> Files:
    """A ConfigMap's or Secret's keys as files (all of them, or ``items`` key -> path)."""
    name = str(source.get("name") or source.get("secretName") or "")
    obj = read("secrets" if kind == "secret" else "configmaps", namespace, name)
    if obj is None:
        if source.get("optional"):
            return {}
        raise ConfigError(f'{kind.lower()} "{name}" not found')
    data = _object_bytes(kind, obj)
    mode = int(source.get("defaultMode", mode))
    items = source.get("items")
    if not items:
        return {key: (value, mode) for key, value in data.items()}
    out: Files = {}
    for item in items:
        key = str(item.get("key"))
        if key not in data:
            if source.get("optional"):
                continue
            raise ConfigError(f"{kind.lower()} references non-existent config key: {key}")
        out[str(item.get("path") or key)] = (data[key], int(item.get("mode", mode)))
    return out


def _labels_text(values: Mapping[str, Any]) -> str:
    return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))


def downward_files(
    pod: Mapping[str, Any], source: Mapping[str, Any], allocatable: Mapping[str, str]
) -> Files:
    """``downwardAPI`` items: a field (``metadata.labels``/``annotations`` as ``key="value"`` lines) or a
    resource of a named container."""
    meta, mode, out = pod.get("metadata") or {}, int(source.get("defaultMode", CONFIGMAP_MODE)), Files()
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    for item in source.get("items") or []:
        if "fieldRef" in item:
            path = str(item["fieldRef"].get("fieldPath") or "")
            whole = {"metadata.labels": "labels", "metadata.annotations": "annotations"}.get(path)
            text = _labels_text(meta.get(whole) or {}) if whole else field_value(pod, path)
        else:
            ref = item.get("resourceFieldRef") or {}
            named = [c for c in containers if c.get("name") == ref.get("containerName")] or containers
            text = resource_value(pod, named[0], ref, allocatable)
        out[str(item["path"])] = (text.encode(), int(item.get("mode", mode)))
    return out


def projected_files(
    pod: Mapping[str, Any], volume: Mapping[str, Any], read: ObjectReader, allocatable: Mapping[str, str],
    token: TokenSource | None = None,
) -> Files:  # fmt: skip
    """The files of a ``configMap``/``secret``/``downwardAPI``/``projected`` volume (``token`` mints a
    ``serviceAccountToken`` source's token)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    if "configMap" in volume:
        return keyed_files("configMap", volume["configMap"], namespace, read, CONFIGMAP_MODE)
    if "secret" in volume:
        return keyed_files("secret", volume["secret"], namespace, read, SECRET_MODE)
    if "downwardAPI" in volume:
        return downward_files(pod, volume["downwardAPI"], allocatable)
    projected, out = volume["projected"], Files()
    default = projected.get("defaultMode")
    for source in projected.get("sources") or []:
        for kind in ("configMap", "secret", "downwardAPI"):
            if kind in source:
                given = dict(source[kind])
                if default is not None:
                    given.setdefault("defaultMode", default)
                out |= projected_files(pod, {kind: given}, read, allocatable, token)
        if "serviceAccountToken" in source:
            out |= _token_file(source["serviceAccountToken"], token, default)
    return out


def _token_file(source: Mapping[str, Any], token: TokenSource | None, default: Any) -> Files:
    """A projected service-account token: ``path``, for ``audience`` (the API server's when unset); no
    expiry (``expirationSeconds`` is ignored: the token dies with its pod). Mode 0600 unless ``defaultMode``."""
    if token is None:
        raise ConfigError("serviceAccountToken: this cluster serves no API to issue a token for")
    path = str(source.get("path") or "")
    if not path:
        raise ConfigError("serviceAccountToken: path is required")
    mode = int(default) if default is not None else SECRET_MODE
    return {path: (token(str(source.get("audience") or "")).encode(), mode)}


def write_atomically(folder: Path, files: Files) -> None:
    """The kubelet's ``AtomicWriter``: files go into a fresh ``..<timestamp>`` directory that the ``..data``
    symlink is swapped to in one rename; each top-level name links through ``..data``."""
    folder.mkdir(parents=True, exist_ok=True)
    if current_files(folder) == files:
        return  # unchanged: the kubelet's writer leaves the payload alone too
    stamp = folder / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    stamp.mkdir()
    for rel, (content, mode) in files.items():
        path = stamp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(content)
    old = os.readlink(folder / "..data") if (folder / "..data").is_symlink() else None
    (folder / "..data_tmp").unlink(missing_ok=True)
    (folder / "..data_tmp").symlink_to(stamp.name)
    (folder / "..data_tmp").replace(folder / "..data")
    tops = {rel.split("/", 1)[0] for rel in files}
    for top in tops:
        if not (folder / top).is_symlink():
            (folder / top).symlink_to(f"..data/{top}")
    for entry in folder.iterdir():
        if entry.is_symlink() and entry.name not in tops and entry.name != "..data":
            entry.unlink()
    if old and old != stamp.name:
        shutil.rmtree(folder / old, ignore_errors=True)


def current_files(folder: Path) -> Files | None:
    """The payload ``..data`` points at now (None when nothing was written yet)."""
    data = folder / "..data"
    if not data.is_dir():
        return None
    out: Files = {}
    for path in data.rglob("*"):
        if path.is_file():
            out[str(path.relative_to(data))] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def has_projections(pod: Mapping[str, Any]) -> bool:
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return any(kind in v for v in volumes for kind in _PROJECTIONS)


def in_memory(volume: Mapping[str, Any]) -> bool:
    """The kubelet backs these with a tmpfs: ``secret`` and ``projected`` volumes (their plugins wrap an
    ``emptyDir`` of ``medium: Memory``) and an ``emptyDir`` that asks for it."""
    medium = (volume.get("emptyDir") or {}).get("medium") if "emptyDir" in volume else None
    return "secret" in volume or "projected" in volume or medium == "Memory"


def volume_path(
    pod: Mapping[str, Any], volume: Mapping[str, Any], sandbox: Path, read: ObjectReader,
    allocatable: Mapping[str, str], token: TokenSource | None = None, memory: Path | None = None,
) -> Path:  # fmt: skip
    """Where ``volume`` lives on this host, created (and its files written) as needed; ``memory`` is the pod's
    directory on a tmpfs, for the volumes the kubelet keeps in memory (None: none here, the sandbox then)."""
    name = str(volume.get("name"))
    base = memory if memory is not None and in_memory(volume) else sandbox
    if "emptyDir" in volume:
        path = base / "volumes" / name
        path.mkdir(parents=True, exist_ok=True)
        return path
    if any(kind in volume for kind in _PROJECTIONS):
        path = base / "volumes" / name
        write_atomically(path, projected_files(pod, volume, read, allocatable, token))
        return path
    if "hostPath" in volume:
        return _host_path(volume["hostPath"])
    if "persistentVolumeClaim" in volume:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        return _host_path(
            claimed_source(read, namespace, str(volume["persistentVolumeClaim"].get("claimName")))
        )
    kinds = sorted(k for k in volume if k != "name")
    raise ConfigError(f"volume {name!r}: {', '.join(kinds)} volumes are not supported on this node")


def claimed_source(read: ObjectReader, namespace: str, name: str) -> Mapping[str, Any]:
    """The ``hostPath``/``local`` source of the volume bound to claim ``name``. A missing or unbound claim
    raises ``ConfigError`` with the messages of kube-scheduler's VolumeBinding and the kubelet, so the pod
    waits (Pending) until the binding controller has bound it."""
    claim = read("persistentvolumeclaims", namespace, name)
    if claim is None:
        raise ConfigError(f'persistentvolumeclaim "{name}" not found')
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        raise ConfigError(f'persistentvolumeclaim "{name}" is being deleted')
    volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
    phase = (claim.get("status") or {}).get("phase")
    if phase != "Bound" or not volume_name:
        raise ConfigError(f'pod has unbound immediate PersistentVolumeClaims: persistentvolumeclaim "{name}" '
                          f"is {phase or 'Pending'}")  # fmt: skip
    volume = read("persistentvolumes", "", volume_name)
    spec = (volume or {}).get("spec") or {}
    if volume is None or not (spec.get("hostPath") or spec.get("local")):
        kinds = sorted(
            k for k in spec if k.endswith(("Path", "Disk", "Store")) or k in ("nfs", "csi", "local")
        )
        what = f"a {', '.join(kinds)} volume" if kinds else "a volume that does not exist"
        raise ConfigError(f'persistentvolumeclaim "{name}" is bound to {volume_name}, {what}: only hostPath and '
                          "local volumes are mounted on this node")  # fmt: skip
    source = spec.get("hostPath") or {"path": spec["local"]["path"], "type": "Directory"}
    return dict(source)


def _host_path(source: Mapping[str, Any]) -> Path:
    path, kind = Path(str(source.get("path"))), str(source.get("type") or "")
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    elif kind in ("Directory", "File") and not (path.is_dir() if kind == "Directory" else path.is_file()):
        raise ConfigError(f"hostPath type check failed: {path} is not a {kind.lower()}")
    return path


def container_mounts(container: Mapping[str, Any], volumes: Mapping[str, Path]) -> list[Mount]:
    """The container's ``volumeMounts`` resolved to host paths (``subPath`` inside the volume)."""
    out = []
    for vm in container.get("volumeMounts") or []:
        name = str(vm.get("name"))
        if name not in volumes:
            raise ConfigError(f"volumeMount {name!r}: no volume of that name in the pod")
        source = volumes[name] / str(vm["subPath"]) if vm.get("subPath") else volumes[name]
        out.append(Mount(source, str(vm.get("mountPath")), bool(vm.get("readOnly"))))
    token = volumes.get(SERVICE_ACCOUNT_VOLUME)
    if token is not None and not any(m.target.rstrip("/") == SERVICE_ACCOUNT_MOUNT for m in out):
        out.append(
            Mount(token, SERVICE_ACCOUNT_MOUNT, read_only=True)
        )  # as the ServiceAccount admission adds it
    return out


def pod_volumes(
    pod: Mapping[str, Any], sandbox: Path, read: ObjectReader, allocatable: Mapping[str, str],
    token: TokenSource | None = None, memory: Path | None = None,
) -> dict[str, Path]:  # fmt: skip
    spec = pod.get("spec") or {}
    return {
        str(v.get("name")): volume_path(pod, v, sandbox, read, allocatable, token, memory)
        for v in spec.get("volumes") or []
    }
