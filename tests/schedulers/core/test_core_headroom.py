"""The room count and the shared greedy victim search (``core.headroom``), and ``place_gang(explain=...)``."""

from __future__ import annotations

from gangplane.schedulers.core import place_gang
from gangplane.schedulers.core.headroom import Headroom, VictimSearch, single_shape
from schedulers.kube_builders import node, pod, snapshot


def _cluster() -> tuple:
    bound = [pod(f"b{i}", gpu=2, node_name=f"n{i % 2}") for i in range(4)]  # both 4-GPU nodes full
    return snapshot(
        [node("n0", gpu=4), node("n1", gpu=4), node("cpu", gpu=0)],
        bound=bound,
        pending=[pod(f"w-{i}", gpu=1, group="w") for i in range(3)],
    )


def test_explain_off_keeps_the_outcome_and_skips_the_message() -> None:
    snap, members = _cluster()
    on = place_gang(snap, members, min_member=3)
    off = place_gang(snap, members, min_member=3, explain=False)
    assert (on.ok, on.best, on.unplaced) == (off.ok, off.best, off.unplaced) and not on.ok
    assert "Insufficient nvidia.com/gpu" in on.message and off.message == ""


def test_room_count_follows_removals_and_ignores_nodes_the_shape_cannot_use() -> None:
    snap, members = _cluster()
    room = Headroom(snap, members[0])
    assert room.total == 0 and single_shape(members)
    assert not room.helps([snap.node_position("cpu")]) and room.helps([snap.node_position("n0")])
    snap.forget("ml/b0")
    room.refresh([snap.node_position("n0")])
    assert room.total == 2 == int(Headroom(snap, members[0]).total)


def test_search_takes_victims_until_the_count_allows_then_reprieves_and_spares_real_tries() -> None:
    snap, members = _cluster()
    tries: list[int] = []

    def fits() -> bool:
        token = snap.checkpoint()
        ok = place_gang(snap, members, min_member=3, explain=False).ok
        snap.rollback(token)
        tries.append(int(ok))
        return ok

    victims = ["ml/b0", "ml/b1", "ml/b2", "ml/b3"]
    info = {key: snap.pod(key) for key in victims}

    def take(key: str) -> int:
        row = snap.location(key)
        snap.forget(key)
        return int(row)

    search = VictimSearch[str, int](
        take=take,
        give_back=lambda key, row: snap.assume(info[key], row),
        fits=fits,
        rows=lambda key: [row] if (row := snap.location(key)) is not None else [],
        independent=lambda key: True,
        room=Headroom(snap, members[0]),
        needed=3,
        exact=True,
    )
    chosen = search.run(victims, accept=lambda key: True)
    assert chosen is not None and [key for key, _ in chosen] == ["ml/b0", "ml/b1"]
    assert tries == [1]  # one real try; the reprieve of b0 is ruled out by the count alone
    assert snap.location("ml/b0") is None and snap.location("ml/b2") is not None
