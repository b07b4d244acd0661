"""The aiohttp application: state, routes, error handling, and the live (server-sent events) stream.

Why aiohttp: one well-kept library is both the HTTP server and the streaming response we need
for server-sent events, and it runs on the uvloop loop the rest of minikafka uses; Starlette
would need an ASGI server beside it.

Every page with parts that change is registered with `add_page`: ``GET <path>`` renders it and
``GET /live<path>`` (same query) is a server-sent-events stream that re-renders its live regions
every `LIVE_INTERVAL_S` and sends those that changed as ``event: region`` with JSON
``{"id": ..., "html": ...}``, plus an ``event: tick`` each round for plots to refresh.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from client.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
)
from console.settings import ConsoleSettings
from console.state import STATE, ConsoleState
from console.web import BadInput, digest, env, render

log = logging.getLogger(__name__)
LIVE_INTERVAL_S = 2.0
Regions = Callable[[web.Request], Awaitable[dict[str, str]]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def unreachable(settings: ConsoleSettings, exc: Exception) -> str:
    return f"The cluster at {settings.bootstrap_servers} does not answer: {exc}"


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Readable pages for bad input and for an unreachable cluster; refuse cross-site form posts."""
    state: ConsoleState = request.app[STATE]
    if request.method == "POST":
        origin = request.headers.get("Origin")
        if origin and origin != "null" and origin.split("://", 1)[-1] != request.host:
            return render(request, "error.html", status=403, message="Cross-site form posts are refused.")
    wants_json = request.path.startswith("/api/")
    try:
        response = await handler(request)
        state.succeeded()
        return response
    except web.HTTPException as exc:
        if exc.status == 404 and not wants_json:
            return render(request, "error.html", status=404, message=f"No page at {request.path}.")
        raise
    except BadInput as exc:
        message, status = str(exc), 400
    except (KafkaConnectionError, KafkaTimeoutError) as exc:
        message, status = unreachable(state.settings, exc), 503
        state.failed(message)
    except AuthenticationError as exc:
        message, status = (
            f"The cluster at {state.settings.bootstrap_servers} refused the console's login: {exc}",
            503,
        )
        state.failed(message)
    except KafkaResponseError as exc:
        message, status = str(exc), 409
    except KafkaError as exc:
        message, status = str(exc), 502
    except Exception:  # a defect of ours: logged with its traceback, a plain sentence on the page
        log.exception("%s %s failed", request.method, request.path_qs)
        message, status = "The console failed on this page; the details are in its log.", 500
    if wants_json:
        return web.json_response({"error": message}, status=status)
    return render(request, "error.html", status=status, message=message)


def live(regions: Regions) -> Handler:
    """A server-sent-events handler streaming the changed regions of a page until the browser leaves."""

    async def handler(request: web.Request) -> web.StreamResponse:
        state: ConsoleState = request.app[STATE]
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        sent: dict[str, str] = {}
        try:
            await response.prepare(request)  # the browser may have left already: a reset, not a defect
            while True:
                try:
                    found = await regions(request)
                    state.succeeded()
                    payload = b""
                    for rid, html in found.items():
                        if sent.get(rid) != html:
                            sent[rid] = html
                            data = json.dumps({"id": rid, "html": html, "digest": digest(html)})
                            payload += f"event: region\ndata: {data}\n\n".encode()
                    payload += b"event: tick\ndata: {}\n\n"
                except (KafkaConnectionError, KafkaTimeoutError) as exc:
                    state.failed(unreachable(state.settings, exc))
                    payload = f"event: banner\ndata: {json.dumps(state.banner())}\n\n".encode()
                except (KafkaError, BadInput) as exc:
                    payload = f"event: banner\ndata: {json.dumps(str(exc))}\n\n".encode()
                else:
                    payload += f"event: banner\ndata: {json.dumps(state.banner())}\n\n".encode()
                await response.write(payload)
                await asyncio.sleep(LIVE_INTERVAL_S)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    return handler


def add_page(app: web.Application, path: str, page: Handler, regions: Regions | None = None) -> None:
    app.router.add_get(path, page)
    if regions is not None:
        app.router.add_get("/live" + path, live(regions))


STATIC = Path(__file__).parent / "static"


def make_app(settings: ConsoleSettings, *, sample: bool = True) -> web.Application:
    from console.pages import brokers, groups, messages, overview, topics, vendor

    app = web.Application(middlewares=[errors], client_max_size=2 * 1024 * 1024)
    state = ConsoleState(settings, env(), sample=sample)
    app[STATE] = state
    app.on_startup.append(state.start)
    app.on_cleanup.append(state.stop)
    overview.routes(app)
    brokers.routes(app)
    topics.routes(app)
    messages.routes(app)
    groups.routes(app)
    vendor.routes(app)
    app.router.add_static("/static", STATIC, name="static", append_version=True)
    return app
