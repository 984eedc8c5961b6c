"""What the node agent keeps of a finished pod: nothing of its own once the informer has caught up.

The agent remembers the pod as its last write returned it (a private copy), so a reconcile that runs before
its informer sees that write does not act on an older version. Once the informer holds that version or a
newer one, the agent keeps the informer's dict instead (shared with the store in-process): 1,000 finished
pods kept ~5.8 MiB of such copies in the memory benchmark (docs/control-plane.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from agent.conftest import pod, python, wait_for, wait_phase
from gangplane.agent import AgentPool
from gangplane.store.catalog import PODS
from gangplane.store.memory import MemoryStore


def test_a_finished_pod_is_held_as_the_informers_dict_not_a_copy(
    store: MemoryStore, make_pool: Callable[..., AgentPool]
) -> None:
    agent = make_pool().agent("node-0")
    store.create(PODS, pod("done", python("main", "pass"), restartPolicy="Never"))
    wait_phase(store, "done", "Succeeded", "Failed", timeout=30)

    def held_shared() -> bool:
        state = agent._pods[("default", "done")]
        cached = agent.informer.get("default", "done")
        return cached is not None and state.latest is cached

    wait_for(held_shared, timeout=30, what="the agent holding the informer's dict")
    latest = agent._pods[("default", "done")].latest
    assert latest is not None and latest["status"]["phase"] == "Succeeded"


def test_a_finished_pod_keeps_no_emptied_process_table(
    store: MemoryStore, make_pool: Callable[..., AgentPool]
) -> None:
    """Its processes are gone: the dict that held them is a fresh empty one (64 bytes), not the emptied one
    (which keeps its table), and a pod without sidecars shares the one empty set of them."""
    agent = make_pool().agent("node-0")
    for name in ("done", "also"):
        store.create(PODS, pod(name, python("main", "pass"), restartPolicy="Never"))
    for name in ("done", "also"):
        wait_phase(store, name, "Succeeded", "Failed", timeout=30)
    # the status that says Succeeded is written after the reconcile that absorbed the exit
    done, also = agent._pods[("default", "done")], agent._pods[("default", "also")]
    assert sys.getsizeof(done.procs) == sys.getsizeof({})
    assert done.spec.sidecars is also.spec.sidecars
