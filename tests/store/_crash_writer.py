"""Child process for test_crash: creates objects forever, printing each name once ``create`` returned."""

from __future__ import annotations

import sys

from gangplane.store import ResourceType, SqliteStore

POD = ResourceType("", "v1", "Pod", "pods")


def main(path: str) -> None:
    store = SqliteStore(path)
    i = 0
    while True:
        name = f"p{i}"
        store.create(POD, {"metadata": {"name": name, "namespace": "d"}, "spec": {"payload": "x" * 512}})
        sys.stdout.write(name + "\n")
        sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    main(sys.argv[1])
