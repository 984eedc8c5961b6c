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


def _search(snap, members, victims: list[str], fits, needed: int, book=None) -> VictimSearch[str, int]:
    """A search over ``victims`` on ``snap`` that really takes them; ``book`` (take, give) makes it counted."""
    info = {key: snap.pod(key) for key in victims}

    def take(key: str) -> int:
        row = snap.location(key)
        snap.forget(key)
        return int(row)

    counted = {}
    if book is not None:
        counted = {
            "loads": lambda key: (
                [(row, info[key].requests)] if (row := snap.location(key)) is not None else []
            ),
            "book_take": book[0],
            "book_give": book[1],
        }
    return VictimSearch[str, int](
        take=take,
        give_back=lambda key, row: snap.assume(info[key], row),
        fits=fits,
        rows=lambda key: [row] if (row := snap.location(key)) is not None else [],
        independent=lambda key: True,
        room=Headroom(snap, members[0]),
        needed=needed,
        exact=True,
        **counted,
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
    search = _search(snap, members, victims, fits, needed=3)
    chosen = search.run(victims, accept=lambda key: True)
    assert chosen is not None and [key for key, _ in chosen] == ["ml/b0", "ml/b1"]
    assert tries == [1]  # one real try; the reprieve of b0 is ruled out by the count alone
    assert snap.location("ml/b0") is None and snap.location("ml/b2") is not None


def test_counted_search_refused_by_the_real_try_leaves_snapshot_and_book_as_they_were() -> None:
    """The count says the job fits but the real try refuses (its own quota, say): the plain search takes
    over from every victim taken for real, and failing it too restores everything — the book included."""
    snap, members = _cluster()
    victims = ["ml/b0", "ml/b1", "ml/b2", "ml/b3"]
    book = {"held": 4}
    counts = (lambda key: book.update(held=book["held"] - 1), lambda key: book.update(held=book["held"] + 1))
    search = _search(snap, members, victims, lambda: False, needed=3, book=counts)
    assert search.run(victims, accept=lambda key: True) is None
    assert book == {"held": 4} and all(snap.location(key) is not None for key in victims)


def test_counted_reprieve_keeps_only_the_last_victim_when_it_alone_makes_room() -> None:
    bound = [
        pod("b0", gpu=2, node_name="n0"),
        pod("b1", gpu=2, node_name="n0"),
        pod("a1", gpu=2, node_name="n1"),
    ]
    snap, members = snapshot(
        [node("n0", gpu=4), node("n1", gpu=4)], bound=bound, pending=[pod("w-0", gpu=4, group="w")]
    )
    victims = ["ml/b0", "ml/a1"]  # b0 frees half of n0 (no room); a1 empties n1, room on its own
    gave_back: list[str] = []

    def fits() -> bool:
        return place_gang(snap, members, min_member=1, explain=False).ok

    search = _search(snap, members, victims, fits, needed=1, book=(lambda key: None, gave_back.append))
    chosen = search.run(victims, accept=lambda key: True)
    assert chosen is not None and [key for key, _ in chosen] == ["ml/a1"]
    assert snap.location("ml/a1") is None and snap.location("ml/b0") is not None
    assert gave_back == ["ml/b0", "ml/a1"]  # b0's book given back (reprieved), a1's before its real take
