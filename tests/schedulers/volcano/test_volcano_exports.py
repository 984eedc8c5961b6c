import gangplane.schedulers.volcano as volcano
from gangplane.schedulers.base import Scheduler


def test_public_surface_is_pinned() -> None:
    assert volcano.__all__ == [
        "ALL_ACTIONS",
        "UPSTREAM_DEFAULT_ACTIONS",
        "Action",
        "QueueBook",
        "SharePolicy",
        "VolcanoConfig",
        "VolcanoScheduler",
    ]


def test_scheduler_satisfies_the_contract() -> None:
    scheduler: Scheduler = volcano.VolcanoScheduler()
    assert scheduler.name == "volcano"
