"""The background event loop behind the synchronous clients.

Each synchronous `Producer`/`Consumer`/`AdminClient` owns a `LoopThread`: a
daemon thread running an event loop (uvloop when installed) on which the
asyncio core does all its I/O, so heartbeats, linger timers and prefetching go
on while the caller's thread is busy elsewhere.

`LoopThread.run(coro)` blocks the calling thread until ``coro`` finishes on
the loop. While it waits, the coroutine may hand functions back to the calling
thread with `call_in_caller` (used for rebalance listeners and commit
callbacks, which Kafka runs in the thread that called poll), so such a
function may itself call blocking client methods without deadlocking.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from client.errors import IllegalStateError, KafkaTimeoutError

T = TypeVar("T")

_CALLER: contextvars.ContextVar[queue.SimpleQueue[Any] | None] = contextvars.ContextVar(
    "minikafka_caller", default=None
)


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency, but the client does not need it
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def call_in_caller(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in the thread blocked in `LoopThread.run` (or right here if there is none).

    A coroutine function (or a function returning an awaitable) is awaited on
    the loop when there is no waiting caller thread.
    """
    q = _CALLER.get()
    if q is None:
        result = fn(*args)
        if inspect.isawaitable(result):
            result = await result
        return result
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    q.put(("call", fn, args, future))
    return await future


class LoopThread:
    """An event loop running in a daemon thread of its own."""

    def __init__(self, name: str) -> None:
        self.loop = new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self.loop)
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    @property
    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self.thread.ident

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and return its result; `KafkaTimeoutError` after ``timeout`` s."""
        if self.on_loop_thread:
            coro.close()
            raise IllegalStateError(
                "a blocking client method was called from a callback running on the client's I/O thread"
            )
        if not self.thread.is_alive():
            coro.close()
            raise IllegalStateError("the client is closed")
        q: queue.SimpleQueue[Any] = queue.SimpleQueue()

        async def wrapped() -> T:
            _CALLER.set(q)
            return await coro

        cfut = asyncio.run_coroutine_threadsafe(wrapped(), self.loop)
        cfut.add_done_callback(lambda _f: q.put(("done",)))
        deadline = None if timeout is None else self.loop.time() + timeout
        try:
            while True:
                wait = None if deadline is None else max(0.0, deadline - self.loop.time())
                try:
                    item = q.get(timeout=wait)
                except queue.Empty:
                    cfut.cancel()
                    raise KafkaTimeoutError(f"operation timed out after {timeout:g} s") from None
                if item[0] == "done":
                    return cfut.result()
                _, fn, args, afut = item
                try:
                    result = fn(*args)
                except BaseException as exc:  # handed back to the coroutine that asked for the call
                    self.loop.call_soon_threadsafe(_set_exception, afut, exc)
                else:
                    self.loop.call_soon_threadsafe(_set_result, afut, result)
        except BaseException:
            cfut.cancel()
            raise

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule ``fn(*args)`` on the loop from any thread."""
        if self.on_loop_thread:
            self.loop.call_soon(fn, *args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        """Stop the loop (cancelling whatever still runs on it) and join the thread."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if not self.on_loop_thread:
                self.thread.join(30)


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
