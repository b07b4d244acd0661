"""ApiVersions: v0-4.

Behavior:
- Answers the version table built from the handler registry (never hand-listed).
- A version outside 0-4 is answered by the connection itself with a v0 body and
  UNSUPPORTED_VERSION (clients then retry with a version from the table).
- v3+: the supported and finalized feature levels of `broker.features`
  (tagged fields 0-2), as a Kafka 4.1 broker sends them; below v4 the
  supported features whose minimum is 0 are left out (KAFKA-17492: older
  clients fail to read them), the finalized levels are all there.
Version notes: v1+ add throttle_time_ms; v3 is flexible (compact array, tag buffers), but its
  response header stays v0; v4 has v3's layout (it lets a feature's min version be 0).
- No authorization: as in Kafka, any connection may ask (before SASL too).
Leaves out: zk_migration_ready (tag 3; no migration here).
"""

from __future__ import annotations

from typing import Any

from broker import features, registry
from broker.context import RequestContext

API_KEY = 18


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    keys = [
        {"api_key": k, "min_version": lo, "max_version": hi, "tagged_fields": {}}
        for k, lo, hi in registry.advertised()
    ]
    response: dict[str, Any] = {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0, "tagged_fields": {}}
    if ctx.version >= 3:
        response["supported_features"] = features.supported(omit_min_zero=ctx.version < 4)
        response["finalized_features_epoch"] = features.FINALIZED_EPOCH
        response["finalized_features"] = features.finalized()
    return response


registry.register(API_KEY, 0, 4, handle)
