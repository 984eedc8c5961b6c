import pytest

from gangplane.schedulers.base import Scheduler
from gangplane.schedulers.default import DefaultScheduler
from gangplane.schedulers.registry import SchedulerRegistry, default_registry


def test_default_registry_order_and_names() -> None:
    registry = default_registry()
    assert registry.names() == [
        "default-scheduler",
        "scheduler-plugins-scheduler",
        "volcano",
        "kai-scheduler",
    ]
    built = registry.build()
    assert list(built) == registry.names()
    assert all(s.name == n for n, s in built.items())
    assert all(
        isinstance(built[n], DefaultScheduler) for n in ("default-scheduler", "scheduler-plugins-scheduler")
    )
    assert built["default-scheduler"] is not built["scheduler-plugins-scheduler"]


def test_duplicates_rejected_and_merge_keeps_order() -> None:
    registry = default_registry()
    with pytest.raises(ValueError):
        registry.register("default-scheduler", DefaultScheduler)
    extra = SchedulerRegistry([("custom", lambda: DefaultScheduler("custom"))])
    assert registry.merge(extra).names() == [*default_registry().names(), "custom"]
    with pytest.raises(ValueError):
        registry.merge(default_registry())


def test_build_subset_and_unknown() -> None:
    registry = default_registry()
    assert list(registry.build(["scheduler-plugins-scheduler"])) == ["scheduler-plugins-scheduler"]
    with pytest.raises(KeyError):
        registry.build(["nope"])


def test_default_scheduler_satisfies_protocol() -> None:
    scheduler: Scheduler = DefaultScheduler()
    assert (
        scheduler.watches
        and scheduler.group_of(
            {"metadata": {"namespace": "x", "labels": {"scheduling.x-k8s.io/pod-group": "g"}}}
        )
        == "x/g"
    )
