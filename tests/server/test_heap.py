"""The heap trimmer (server/heap.py): trims only after the process grew, never an idle one again."""

from __future__ import annotations

from gangplane.server.heap import GROWTH, HeapTrimmer, resident_bytes, should_trim, start_heap_trimmer


def test_trims_only_after_growth_since_the_last_trim() -> None:
    assert not should_trim(100 + GROWTH - 1, 100) and should_trim(100 + GROWTH, 100)
    sizes = iter([10 * GROWTH, 10 * GROWTH, 12 * GROWTH, 11 * GROWTH, 11 * GROWTH])
    trims: list[int] = []
    trimmer = HeapTrimmer(lambda: trims.append(1), resident=lambda: next(sizes))  # starts at 10
    assert not trimmer.step()  # still 10: idle, nothing to trim
    assert trimmer.step() and trims == [1]  # grew to 12; the trim leaves 11
    assert not trimmer.step() and trims == [1]  # 11 again: nothing grew since


def test_without_malloc_trim_it_does_nothing() -> None:
    trimmer = HeapTrimmer(None, resident=lambda: 10 * GROWTH)
    assert not trimmer.step()
    trimmer.start()  # starts no thread


def test_the_real_trim_hands_back_free_pages_between_live_blocks() -> None:
    trimmer = start_heap_trimmer()
    trimmer.stop()
    if trimmer._trim is None:  # not glibc
        return
    blocks = [bytes(2000) for _ in range(20_000)]  # ~40 MB from malloc (over pymalloc's 512 bytes)
    kept = blocks[::10]  # every tenth stays: the heap cannot shrink from its top alone
    del blocks
    grown = resident_bytes()
    trimmer._after_last = 0  # as if it had grown since the last trim
    assert trimmer.step()
    assert resident_bytes() < grown - 16 * GROWTH and len(kept) == 2_000
