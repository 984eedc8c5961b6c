"""A container's environment and argv as Kubernetes builds them, as pure functions.

- ``envFrom`` first (ConfigMap / Secret keys, with ``prefix``), then ``env`` in order; a later name wins.
- ``value`` may refer to earlier variables as ``$(NAME)``; ``$$`` escapes a ``$``; an unknown reference is
  left as written (``third_party/forked/golang/expansion``).
- ``valueFrom``: ``fieldRef`` (``metadata.name|namespace|uid``, ``metadata.labels['k']``,
  ``metadata.annotations['k']``, ``spec.nodeName``, ``spec.serviceAccountName``, ``status.podIP(s)``,
  ``status.hostIP(s)``), ``resourceFieldRef`` (rounded up by ``divisor``), ``configMapKeyRef`` and
  ``secretKeyRef`` (through a reader; Secret ``data`` is base64).
- ``command`` replaces the image entrypoint and ``args`` follow it; both are expanded with the container's
  variables. Images are not run, so a container without ``command`` runs its ``args``.

A reference that cannot be resolved and is not ``optional`` raises ``ConfigError``: the container waits in
``CreateContainerConfigError`` and the agent tries again.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from gangplane.agent.names import LOCALHOST
from gangplane.api.quantity import parse

# (resource plural, namespace, name) -> the object, or None when it does not exist.
ObjectReader = Callable[[str, str, str], Mapping[str, Any] | None]

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ConfigError(Exception):
    """A container's configuration cannot be resolved (yet)."""


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Kubernetes ``$(VAR)`` expansion."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "$" or i + 1 == len(text):
            out.append(text[i])
            i += 1
        elif text[i + 1] == "$":
            out.append("$")
            i += 2
        elif text[i + 1] == "(" and (close := text.find(")", i + 2)) != -1:
            value = lookup(text[i + 2 : close])
            out.append(text[i : close + 1] if value is None else value)
            i = close + 1
        else:
            out.append(text[i : i + 2])
            i += 2
    return "".join(out)


def container_env(
    pod: Mapping[str, Any], container: Mapping[str, Any], read: ObjectReader, allocatable: Mapping[str, str]
) -> dict[str, str]:
    """The variables the container declares, resolved and expanded, in declaration order."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        env |= _env_from(source, namespace, read)
    for var in container.get("env") or []:
        value = _value(pod, container, var, namespace, read, allocatable)
        if value is not None:
            env[str(var["name"])] = expand(value, env.get)
    return env


def _env_from(source: Mapping[str, Any], namespace: str, read: ObjectReader) -> dict[str, str]:
    prefix = str(source.get("prefix") or "")
    for field, plural in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
        ref = source.get(field)
        if ref:
            data = _data(read, plural, namespace, ref)
            return {prefix + k: v for k, v in data.items() if _ENV_NAME.match(prefix + k)}
    return {}


def _data(read: ObjectReader, plural: str, namespace: str, ref: Mapping[str, Any]) -> dict[str, str]:
    name = str(ref.get("name") or "")
    obj = read(plural, namespace, name)
    if obj is None:
        if ref.get("optional"):
            return {}
        raise ConfigError(f'{plural[:-1]} "{name}" not found')
    return object_data(plural, obj)


def object_data(plural: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """A ConfigMap's ``data``, or a Secret's ``data`` decoded (and ``stringData``, as the API server merges)."""
    if plural != "secrets":
        return {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    decoded = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            decoded[str(key)] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as err:
            raise ConfigError(f"secret key {key!r} is not base64 text: {err}") from err
    return decoded | {str(k): str(v) for k, v in (obj.get("stringData") or {}).items()}


def _value(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    var: Mapping[str, Any],
    namespace: str,
    read: ObjectReader,
    allocatable: Mapping[str, str],
) -> str | None:
    source = var.get("valueFrom")
    if not source:
        return str(var.get("value") or "")
    if "fieldRef" in source:
        return field_value(pod, str(source["fieldRef"].get("fieldPath") or ""))
    if "resourceFieldRef" in source:
        return resource_value(pod, container, source["resourceFieldRef"], allocatable)
    for field, plural in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
        if field in source:
            return _key_value(read, plural, namespace, source[field])
    raise ConfigError(f"env {var.get('name')!r}: unsupported valueFrom {sorted(source)}")


def _key_value(read: ObjectReader, plural: str, namespace: str, ref: Mapping[str, Any]) -> str | None:
    data = _data(read, plural, namespace, ref)
    key = str(ref.get("key") or "")
    if key in data:
        return data[key]
    if ref.get("optional"):
        return None
    raise ConfigError(f"couldn't find key {key} in {plural[:-1]} {namespace}/{ref.get('name')}")


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """The downward API's ``fieldRef``; pods run on this host, so every IP is 127.0.0.1."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": LOCALHOST,
        "status.podIPs": LOCALHOST,
        "status.hostIP": LOCALHOST,
        "status.hostIPs": LOCALHOST,
    }
    if path in simple:
        return str(simple[path] or "")
    match = _SUBSCRIPT.match(path)
    if match is None:
        raise ConfigError(f"unsupported fieldRef fieldPath {path!r}")
    return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))


def resource_value(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ref: Mapping[str, Any],
    allocatable: Mapping[str, str],
) -> str:
    """``resourceFieldRef``: a request or limit divided by ``divisor``, rounded up; an unset limit is the
    node's allocatable (as the kubelet defaults it)."""
    kind, _, resource = str(ref.get("resource") or "").partition(".")
    if kind not in ("requests", "limits") or not resource:
        raise ConfigError(f"unsupported resourceFieldRef resource {ref.get('resource')!r}")
    named = ref.get("containerName")
    if named:
        spec = pod.get("spec") or {}
        found = [c for c in spec.get("containers") or [] if c.get("name") == named]
        container = found[0] if found else container
    given = (container.get("resources") or {}).get(kind) or {}
    text = given.get(resource, allocatable.get(resource, "0") if kind == "limits" else "0")
    value = parse(text) / parse(str(ref.get("divisor") or "1"))
    return str(math.ceil(value))


def argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """``command + args`` with ``$(VAR)`` expanded from the container's variables."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return [expand(str(word), env.get) for word in words]
