"""The public surface of ``gangplane.agent`` is pinned."""

import gangplane.agent


def test_all_is_pinned() -> None:
    assert sorted(gangplane.agent.__all__) == sorted(
        [
            "LEGACY_FINALIZER",
            "AgentPool",
            "ClusterConfig",
            "HostInfo",
            "NodeAgent",
            "NodeGroup",
            "NodeSpec",
            "PortAllocator",
            "default_config",
            "detect_host",
            "load_config",
            "node_objects",
            "node_specs",
        ]
    )
    for name in gangplane.agent.__all__:
        assert getattr(gangplane.agent, name) is not None
