import gangplane.schedulers.kai as kai
from gangplane.schedulers.base import Scheduler


def test_public_surface_is_pinned() -> None:
    assert kai.__all__ == [
        "KaiBook",
        "KaiConfig",
        "KaiScheduler",
        "ShareInput",
        "TreeQueue",
        "divide",
        "divide_tree",
    ]


def test_scheduler_satisfies_the_contract() -> None:
    scheduler: Scheduler = kai.KaiScheduler()
    assert scheduler.name == "kai-scheduler"
