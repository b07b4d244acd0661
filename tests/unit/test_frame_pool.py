"""FramePool: reuse of large receive buffers, never while anything still refers to one."""

from __future__ import annotations

from broker.frame_pool import FramePool


def test_buffer_is_reused_once_handed_back() -> None:
    pool = FramePool()
    first = pool.take(1000)
    assert len(first) == 1000 and not first.readonly
    first[:] = b"m" * 1000  # a new buffer would be zeros
    pool.give(first)
    second = pool.take(600)  # smaller: the same buffer, seen through a view of the asked size
    assert len(second) == 600 and len(second.obj) == 1000 and bytes(second) == b"m" * 600


def test_buffer_with_a_live_slice_is_never_reused() -> None:
    pool = FramePool()
    view = pool.take(1000)
    view[:] = b"a" * 1000
    kept = view[10:20]  # e.g. a record set a handler still holds
    buf = view.obj
    pool.give(view)
    fresh = pool.take(1000)
    assert fresh.obj is not buf
    fresh[:] = b"b" * 1000
    assert bytes(kept) == b"a" * 10


def test_smallest_fitting_buffer_is_taken_and_limits_hold() -> None:
    pool = FramePool(max_buffers=2, max_buffer_bytes=10_000)
    views = [pool.take(n) for n in (3000, 5000, 7000, 20_000)]
    sizes = {id(v.obj): len(v.obj) for v in views}
    for v in views:
        pool.give(v)
    # 20,000 is over the size limit; of the other three the smallest was dropped
    assert sorted(len(pool.take(1).obj) for _ in range(2)) == [5000, 7000]
    assert len(pool.take(1).obj) == 1  # nothing left: a new buffer
    assert sorted(sizes.values()) == [3000, 5000, 7000, 20_000]


def test_take_larger_than_every_kept_buffer_allocates() -> None:
    pool = FramePool()
    small = pool.take(100)
    pool.give(small)
    big = pool.take(5000)
    assert len(big) == 5000 and len(big.obj) == 5000


def test_buffer_still_read_at_give_is_reused_once_that_reader_lets_go() -> None:
    """The event loop holds the buffer of the read that completed a frame until its callback
    returns, which is after the frame was handled and handed back."""
    pool = FramePool()
    view = pool.take(1000)
    in_flight = view[500:]  # the read's buffer, as the loop holds it
    first = id(view.obj)  # not a reference: that would pin the buffer
    pool.give(view)
    in_flight.release()  # the read callback returned
    again = pool.take(1000)
    assert id(again.obj) == first and (pool.allocated, pool.reused) == (1, 1)


def test_counts_allocations_and_reuses() -> None:
    pool = FramePool()
    for _ in range(3):
        pool.give(pool.take(100_000))
    kept = pool.take(100_000)
    slice_ = kept[:10]
    pool.give(kept)
    pool.take(100_000)  # the kept slice pins the only buffer
    assert (pool.allocated, pool.reused) == (2, 3)
    assert len(slice_) == 10
