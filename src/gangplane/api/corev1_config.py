"""Core ``v1`` ConfigMap and Secret: configuration objects plugins build (the MPI hostfile and SSH keys).

Open models, like the other Kubernetes shapes: fields gangplane does not model are kept and written back.
``Secret.data`` holds base64 text exactly as on the wire; ``stringData`` is the plain-text write-only form.
"""

from __future__ import annotations

from gangplane.api.base import OpenModel
from gangplane.api.meta import ObjectMeta

API_VERSION = "v1"
CONFIG_MAP_KIND = "ConfigMap"
SECRET_KIND = "Secret"

# Secret types and the keys Kubernetes defines for them.
SECRET_TYPE_SSH_AUTH = "kubernetes.io/ssh-auth"
SSH_AUTH_PRIVATE_KEY = "ssh-privatekey"


class ConfigMap(OpenModel):
    api_version: str = API_VERSION
    kind: str = CONFIG_MAP_KIND
    metadata: ObjectMeta = ObjectMeta()
    data: dict[str, str] | None = None
    binary_data: dict[str, str] | None = None  # base64
    immutable: bool | None = None


class Secret(OpenModel):
    api_version: str = API_VERSION
    kind: str = SECRET_KIND
    metadata: ObjectMeta = ObjectMeta()
    type: str | None = None
    data: dict[str, str] | None = None  # base64
    string_data: dict[str, str] | None = None
    immutable: bool | None = None
