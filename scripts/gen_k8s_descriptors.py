"""Generate ``src/gangplane/server/k8s_builtin.desc``: the protobuf descriptors of the built-in kinds the API
server serves (core/v1, batch/v1, scheduling.k8s.io/v1, coordination.k8s.io/v1, and the apimachinery messages
they use), compiled by protoc (grpcio-tools) from the upstream ``.proto`` files.

kubectl's typed commands (``create configmap|secret|namespace|job|priorityclass``, ``run``) send protobuf
bodies; the API server
decodes them with these descriptors (``gangplane.server.k8sproto``) through the protobuf runtime, so no message
is hand-typed and no generated Python is committed. The set has no source info: upstream's comments are not
shipped. Shipped set: kubernetes/api 10b39a39bcee (2026-07-24), kubernetes/apimachinery eed236ceee2c
(2026-07-23). Regenerate (needs ``pip install grpcio-tools``) from an include tree holding
``k8s.io/api/{core/v1,batch/v1,scheduling/v1,scheduling/v1alpha3,coordination/v1}/generated.proto`` and
``k8s.io/apimachinery/pkg/{api/resource,apis/meta/v1,runtime,runtime/schema,util/intstr}/generated.proto``:

    .venv/bin/python scripts/gen_k8s_descriptors.py INCLUDE_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gangplane" / "server" / "k8s_builtin.desc"
# The built-in groups the API server serves; their imports (apimachinery, scheduling/v1alpha3) come along.
ENTRIES = tuple(
    f"k8s.io/api/{gv}/generated.proto" for gv in ("core/v1", "batch/v1", "scheduling/v1", "coordination/v1")
)


def main(include: Path) -> None:
    from grpc_tools import protoc  # the build-time toolchain, not a runtime dependency

    code = protoc.main(
        ["protoc", f"-I{include}", f"--descriptor_set_out={OUT}", "--include_imports", *ENTRIES]
    )
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")
    print(f"{OUT.relative_to(ROOT)}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
