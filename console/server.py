"""Run the console: uvloop, the aiohttp app, a log line with its address, Ctrl-C to stop."""

from __future__ import annotations

import logging

import uvloop
from aiohttp import web

from console.app import make_app
from console.settings import ConsoleSettings

log = logging.getLogger("console")


def serve(settings: ConsoleSettings) -> None:
    app = make_app(settings)
    log.info(
        "console for %s on http://%s:%d (lag history in %s)",
        settings.bootstrap_servers,
        settings.host,
        settings.port,
        settings.history_path,
    )
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        print=None,
        access_log=None,
        loop=uvloop.new_event_loop(),
        shutdown_timeout=2.0,
    )
