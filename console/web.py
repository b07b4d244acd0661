"""What every page shares: readable input errors, query parsing, pagination, rendering.

`BadInput` carries a message meant for the person at the browser; the app's error middleware
shows it on the page (status 400) instead of a stack trace.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

import jinja2
from aiohttp import web

from client import times
from console.gateway import TopicRow
from console.pages.vendor import PLOTLY_URL
from console.state import STATE

T = TypeVar("T")
PAGE_SIZE = 50


class BadInput(ValueError):
    """Input the console cannot act on; ``str()`` is shown on the page."""


def env() -> jinja2.Environment:
    e = jinja2.Environment(
        loader=jinja2.PackageLoader("console", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    e.filters["size"] = human_size
    e.filters["ts"] = format_ms
    e.filters["num"] = lambda n: "—" if n is None else f"{n:,}"
    e.globals["plotly_url"] = lambda: PLOTLY_URL
    e.filters["digest"] = digest
    e.filters["duration"] = human_duration
    e.filters["percent"] = human_percent
    return e


def digest(html: str) -> str:
    """A short fingerprint of a live region's HTML: the browser skips an update it already shows."""
    return hashlib.sha1(html.encode(), usedforsecurity=False).hexdigest()[:16]


def human_duration(ms: str | int | None) -> str:
    """A retention in ms as people say it: "7 d", "12 h", "forever" for -1; as given if not a number."""
    try:
        n = int(ms)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "—" if ms is None else str(ms)
    if n < 0:
        return "forever"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} ms"


def human_percent(value: float | None) -> str:
    """A percentage as the pages show it: "37.5 %", whole ones without decimals ("0 %", "100 %"),
    "—" for None."""
    if value is None:
        return "—"
    return f"{value:.0f} %" if value == int(value) else f"{value:.1f} %"


def human_size(n: int | None) -> str:
    if n is None:
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def format_ms(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def parse_time(text: str) -> int:
    """A timestamp from a form: ms since the epoch, or ISO 8601 (UTC unless it names a zone)."""
    try:
        ms = times.parse_time(text, local=False)
    except ValueError:
        ms = -1
    if ms < 0:
        raise BadInput(
            f"{text.strip()!r} is not a timestamp: use ISO 8601 (2026-11-25T10:00:00) or milliseconds since 1970"
        )
    return ms


def int_param(
    query: Any, name: str, default: int | None = None, *, low: int | None = None, high: int | None = None
) -> int | None:
    """An integer query/form field, or ``default`` when absent or blank; `BadInput` when malformed."""
    raw = query.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise BadInput(f"{name} must be a whole number, not {str(raw)!r}") from None
    if low is not None and value < low:
        raise BadInput(f"{name} must be at least {low}, not {value}")
    if high is not None and value > high:
        raise BadInput(f"{name} must be at most {high}, not {value}")
    return value


@dataclass(frozen=True)
class Page:
    """One page of a longer list: ``items`` and what the pager needs."""

    items: Sequence[Any]
    number: int
    pages: int
    total: int


def paginate(items: Sequence[T], number: int, size: int = PAGE_SIZE) -> Page:
    pages = max(math.ceil(len(items) / size), 1)
    number = min(max(number, 1), pages)
    return Page(items[(number - 1) * size : number * size], number, pages, len(items))


def link_maker(request: web.Request, keep: tuple[str, ...]) -> Callable[..., str]:
    """``link(page=2)``: this page's query string with ``keep``'s current values and the changes."""

    def link(**change: Any) -> str:
        q = {k: v for k, v in request.query.items() if k in keep}
        q.update({k: str(v) for k, v in change.items()})
        return "?" + urlencode(q)

    return link


async def topic_or_error(request: web.Request) -> TopicRow:
    """The topic named in the URL, or `BadInput` saying it does not exist (any more)."""
    name = request.match_info["name"]
    row = await request.app[STATE].gateway.topic(name)
    if row is None:
        raise BadInput(f"there is no topic {name!r} (deleted, or never created)")
    return row


def render(request: web.Request, template: str, *, status: int = 200, **context: Any) -> web.Response:
    state = request.app[STATE]
    html = state.templates.get_template(template).render(
        request=request, banner=state.banner(), settings=state.settings, **context
    )
    return web.Response(text=html, status=status, content_type="text/html")


def fragment(request: web.Request, template: str, **context: Any) -> str:
    """A template rendered to a string (a live region of a page)."""
    return request.app[STATE].templates.get_template(template).render(request=request, **context)
