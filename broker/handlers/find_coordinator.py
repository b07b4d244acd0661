"""FindCoordinator: v0-6.

Behavior:
- key_type 0 (group; v0 has no key_type): the coordinator of a group is the
  leader of its `__consumer_offsets` partition (Java hashCode of the group id,
  modulo the partition count), as the cluster view has it; a partition with
  no live leader answers COORDINATOR_NOT_AVAILABLE.
- key_type 1 (transaction): COORDINATOR_NOT_AVAILABLE (no transactions yet);
  any other key_type: INVALID_REQUEST.
- v4+: several keys in one request (coordinator_keys), one answer each.
Version notes: v1 adds key_type, throttle_time_ms and error_message; v2 has v1's layout; v3 is
  flexible; v4 batches keys; v5 may answer TRANSACTION_ABORTABLE (KIP-890); v6 allows key_type 2
  (share groups, answered INVALID_REQUEST: not served).
Leaves out: throttling; authorization.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups.store import OFFSETS_TOPIC
from protocol.errors import ErrorCode

API_KEY = 10
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _lookup(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    """One key's coordinator: {error_code, error_message, node_id, host, port}."""
    if key_type == GROUP_KEY_TYPE:
        broker = ctx.broker
        offsets = broker.cluster.topic(OFFSETS_TOPIC)
        if offsets is not None:
            state = offsets.partitions[broker.groups.partition_for(key)]
            node = broker.cluster.broker(state.leader)
            address = node.address(ctx.listener) if node is not None else None
            if address is not None:
                return {
                    "error_code": 0,
                    "error_message": None,
                    "node_id": state.leader,
                    "host": address[0],
                    "port": address[1],
                }
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group's coordinator partition has no leader"
    elif key_type == TRANSACTION_KEY_TYPE:
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not supported"
    else:
        code, message = ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    key_type = req.key_type if ctx.version >= 1 else GROUP_KEY_TYPE
    if ctx.version >= 4:
        coordinators = [{"key": key, **_lookup(ctx, key_type, key)} for key in req.coordinator_keys]
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    return {"throttle_time_ms": 0, **_lookup(ctx, key_type, req.key)}


registry.register(API_KEY, 0, 6, handle)
