"""Child process for test_cascade: deletes an owner of many dependents and reports, from a watch, once the
cascade is under way (so the parent can SIGKILL it in the middle)."""

from __future__ import annotations

import sys
import threading

from gangplane.store import ResourceType, SqliteStore

POD = ResourceType("", "v1", "Pod", "pods")
JOB = ResourceType("batch", "v1", "Job", "jobs")


def main(path: str, report_after: int) -> None:
    store = SqliteStore(path)
    watch = store.watch(POD, resource_version=store.list(POD).resource_version)

    def report() -> None:
        for seen, _ in enumerate(watch, start=1):
            if seen == report_after:
                sys.stdout.write("mid-cascade\n")
                sys.stdout.flush()
                return

    threading.Thread(target=report, daemon=True).start()
    store.delete(JOB, "d", "owner")
    sys.stdout.write("finished\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
