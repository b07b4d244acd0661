"""What a handler gets besides its decoded request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.headers import RequestHeader

if TYPE_CHECKING:
    from broker.broker import Broker


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    peer: str
    listener: str  # the listener the request came in on: Metadata answers its addresses

    @property
    def version(self) -> int:
        return self.header.api_version
