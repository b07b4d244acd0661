"""Third-party browser code served from installed Python packages (never a CDN: works offline).

Plotly's ``plotly.min.js`` ships inside the ``plotly`` Python package; it is read once,
gzip-compressed in memory and served with a long cache lifetime under a versioned URL.
"""

from __future__ import annotations

import functools
import gzip
from importlib import metadata, resources

from aiohttp import web

PLOTLY_VERSION = metadata.version("plotly")
PLOTLY_URL = f"/vendor/plotly-{PLOTLY_VERSION}.min.js"


@functools.cache
def _plotly() -> tuple[bytes, bytes]:
    raw = resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()
    return raw, gzip.compress(raw, 6)


async def plotly(request: web.Request) -> web.Response:
    raw, packed = _plotly()
    headers = {"Cache-Control": "public, max-age=31536000, immutable", "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return web.Response(body=packed, headers=headers, content_type="application/javascript")
    return web.Response(body=raw, headers=headers, content_type="application/javascript")


def routes(app: web.Application) -> None:
    app.router.add_get(PLOTLY_URL, plotly)
