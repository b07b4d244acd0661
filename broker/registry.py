"""The API registry: which handler serves which (api key, version range).

Handler modules call `register(api_key, min_version, max_version, fn)` at import
time. ApiVersions is answered from this table (never a hand-written list), and
the connection rejects any key or version not in it.

`advertise_min` lets an API advertise versions it does not serve: Produce v0-2
are advertised so that old librdkafka enables compression, but requests at
those versions close the connection like any unsupported version.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.context import RequestContext

Response = dict[str, Any] | None
HandlerFn = Callable[["RequestContext", Any], "Response | Awaitable[Response]"]


@dataclass(frozen=True)
class ApiHandler:
    api_key: int
    min_version: int
    max_version: int
    fn: HandlerFn
    advertise_min: int

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


HANDLERS: dict[int, ApiHandler] = {}


def register(
    api_key: int, min_version: int, max_version: int, fn: HandlerFn, *, advertise_min: int | None = None
) -> None:
    HANDLERS[api_key] = ApiHandler(
        api_key, min_version, max_version, fn, min_version if advertise_min is None else advertise_min
    )


def advertised() -> list[tuple[int, int, int]]:
    """(api_key, min, max) for every registered API, sorted by key."""
    return [
        (h.api_key, h.advertise_min, h.max_version)
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
    ]
