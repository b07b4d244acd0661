"""What the console's handlers share: settings, the cluster gateway, the lag history and its
sampler, the templates; kept on the application under `STATE`."""

from __future__ import annotations

import asyncio
import contextlib
import time

import jinja2
from aiohttp import web

from client.producer import AIOProducer
from console.gateway import Gateway
from console.lag_store import LagStore
from console.sampler import LagSampler
from console.settings import ConsoleSettings


class ConsoleState:
    """What the handlers share, kept on ``app["console"]``."""

    def __init__(
        self, settings: ConsoleSettings, templates: jinja2.Environment, *, sample: bool = True
    ) -> None:
        self.settings = settings
        self.gateway = Gateway(settings.admin_config())
        self.store = LagStore(settings.history_path, settings.retention_days)
        self.sampler = LagSampler(self.gateway.admin, self.store, settings.sample_interval_s)
        self.templates: jinja2.Environment = templates
        self.sample = sample
        self.last_error: str | None = None
        self.last_error_at = 0.0
        self._task: asyncio.Task[None] | None = None
        self._producer: AIOProducer | None = None
        self._producer_lock = asyncio.Lock()

    async def producer(self) -> AIOProducer:
        """The producer behind the messages page's form (acks=all), started on first use."""
        async with self._producer_lock:
            if self._producer is None:
                producer = AIOProducer({**self.settings.client_config(), "acks": "all", "linger.ms": 0})
                await producer.start()
                self._producer = producer
            return self._producer

    def banner(self) -> str | None:
        """A line about the cluster being out of reach, while it is."""
        if self.last_error and time.monotonic() - self.last_error_at < 30:
            return self.last_error
        if self.sample and self.sampler.last_error:
            return f"Lag history is not being recorded: the last sample failed ({self.sampler.last_error})"
        return None

    def failed(self, message: str) -> None:
        self.last_error, self.last_error_at = message, time.monotonic()

    def succeeded(self) -> None:
        self.last_error = None

    async def start(self, _app: web.Application) -> None:
        await self.gateway.start()
        if self.sample:
            self._task = asyncio.create_task(self.sampler.run(), name="lag-sampler")

    async def stop(self, _app: web.Application) -> None:
        if self._task is not None:
            self.sampler.stop()  # ends the loop even if a library swallowed the cancellation
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.close(timeout=2)
        await self.gateway.close()
        await asyncio.to_thread(self.store.close)


STATE = web.AppKey("console", ConsoleState)
