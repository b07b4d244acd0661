"""The overview: brokers and controller, topic/partition/group counts, replication health, and a
live plot of records in and consumed per second (from the lag sampler's history)."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from console.app import add_page
from console.state import STATE
from console.web import fragment, int_param, render

RANGES = {"15m": 15 * 60_000, "1h": 3_600_000, "6h": 6 * 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000}


async def regions(request: web.Request) -> dict[str, str]:
    gateway = request.app[STATE].gateway
    snap = await gateway.snapshot()
    groups = await gateway.groups()
    user_topics = [t for t in snap.topics.values() if not t.internal]
    return {
        "summary": fragment(
            request, "_overview_summary.html", snap=snap, groups=groups, user_topics=user_topics
        )
    }


async def page(request: web.Request) -> web.Response:
    return render(request, "overview.html", regions=await regions(request), ranges=list(RANGES))


def window(request: web.Request) -> tuple[int, int]:
    """(since, until) in ms for ``?range=`` (one of `RANGES`) or ``?since=&until=``."""
    now = int(time.time() * 1000)
    name = request.query.get("range", "1h")
    since = int_param(request.query, "since", now - RANGES.get(name, RANGES["1h"]), low=0)
    until = int_param(request.query, "until", now, low=0)
    return since or 0, until or now


async def rates(request: web.Request) -> web.Response:
    """JSON for the throughput plot: {x: [ms], series: [{name, y}], ylabel}."""
    state = request.app[STATE]
    since, until = window(request)
    history = await asyncio.to_thread(state.store.cluster_rates, since, until, 300)
    series = [
        {"name": "records in /s", "y": history.records_in},
        {"name": "records consumed /s", "y": history.records_out},
    ]
    if any(v is not None for v in history.bytes_in):
        series.append({"name": "bytes in /s", "y": history.bytes_in, "axis": "y2"})
    if any(v is not None for v in history.bytes_out):
        series.append({"name": "bytes consumed /s (estimate)", "y": history.bytes_out, "axis": "y2"})
    return web.json_response(
        {"x": history.timestamps, "series": series, "ylabel": "records / s", "y2label": "bytes / s"}
    )


def routes(app: web.Application) -> None:
    add_page(app, "/", page, regions)
    app.router.add_get("/api/rates", rates)
