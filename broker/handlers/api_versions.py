"""ApiVersions: v0-4.

Behavior:
- Answers the version table built from the handler registry (never hand-listed).
- A version outside 0-4 is answered by the connection itself with a v0 body and
  UNSUPPORTED_VERSION (clients then retry with a version from the table).
Version notes: v1+ add throttle_time_ms; v3 is flexible (compact array, tag buffers), but its
  response header stays v0; v4 has v3's layout (it lets a feature's min version be 0).
Leaves out: supported/finalized features (tagged fields 0-3 are not sent).
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext

API_KEY = 18


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    keys = [
        {"api_key": k, "min_version": lo, "max_version": hi, "tagged_fields": {}}
        for k, lo, hi in registry.advertised()
    ]
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0, "tagged_fields": {}}


registry.register(API_KEY, 0, 4, handle)
