"""Request bodies as kube-apiserver reads them: at most ``limits.MAX_REQUEST_BYTES`` (413, without reading
further), JSON (YAML for apply) without NaN or Infinity and nested at most ``limits.MAX_DEPTH`` deep (400)."""

from __future__ import annotations

from typing import Any

import yaml
from starlette.requests import Request

from gangplane.api import limits
from gangplane.errors import BadRequest, RequestEntityTooLarge
from gangplane.server import k8sproto, protowire, query


class _JsonLikeYaml(yaml.CSafeLoader):
    """YAML as the API server converts it to JSON: timestamps stay the strings they were written as."""


_JsonLikeYaml.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


async def _read_capped(request: Request) -> bytes:
    """The body, refused with 413 past ``MAX_REQUEST_BYTES`` without reading more than that."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.MAX_REQUEST_BYTES:
        raise _too_large()
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limits.MAX_REQUEST_BYTES:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large() -> RequestEntityTooLarge:
    return RequestEntityTooLarge(f"the request body is larger than {limits.MAX_REQUEST_BYTES} bytes")


def _decode(raw: bytes, yaml_ok: bool) -> Any:
    """JSON (or YAML for apply) as upstream decodes it: no NaN/Infinity, bounded nesting."""
    if not yaml_ok:
        return limits.loads(raw)
    try:
        value = yaml.load(raw, Loader=_JsonLikeYaml)
    except RecursionError:
        raise ValueError(f"the YAML nests deeper than {limits.MAX_DEPTH} levels") from None
    limits.loads(limits.dumps(value))  # the same JSON the API server converts YAML to, checked the same way
    return value


async def read(request: Request, *, yaml_ok: bool = False) -> Any:
    """The decoded body (None when empty): 415 for other media types, 413 past 3 MiB, 400 if undecodable.
    Protobuf (what kubectl's typed commands send) is decoded for the built-in kinds ``k8sproto`` knows."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() == protowire.CONTENT_TYPE:
        return k8sproto.decode(await _read_capped(request))
    query.check_body_type(content_type, yaml_ok=yaml_ok)
    raw = await _read_capped(request)
    if not raw.strip():
        return None
    try:
        return _decode(raw, yaml_ok)
    except (ValueError, yaml.YAMLError) as exc:
        raise BadRequest(f"the request body could not be decoded: {exc}") from None
