"""FindCoordinator: v0-6.

Behavior:
- key_type 0 (group; v0 has no key_type): the coordinator of a group is the
  leader of its `__consumer_offsets` partition (Java hashCode of the group id,
  modulo the partition count), as the cluster view has it; a partition with
  no live leader answers COORDINATOR_NOT_AVAILABLE.
- key_type 1 (transaction): the leader of the id's `__transaction_state`
  partition (same formula), the transaction coordinator; any other
  key_type: INVALID_REQUEST.
- v4+: several keys in one request (coordinator_keys), one answer each.
Version notes: v1 adds key_type, throttle_time_ms and error_message; v2 has v1's layout; v3 is
  flexible; v4 batches keys; v5 may answer TRANSACTION_ABORTABLE (KIP-890); v6 allows key_type 2
  (share groups, answered INVALID_REQUEST: not served).
- Authorization (with an authorizer configured), as KafkaApis, per key before
  anything else: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) or on
  the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups.store import OFFSETS_TOPIC
from broker.security.acls import AclOperation, ResourceType
from broker.txn.log import TXN_TOPIC
from protocol.errors import ErrorCode

API_KEY = 10
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _lookup(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    """One key's coordinator: {error_code, error_message, node_id, host, port}."""
    broker = ctx.broker
    if key_type == GROUP_KEY_TYPE and not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return _failed(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    if key_type == TRANSACTION_KEY_TYPE and not ctx.authorized(
        AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return _failed(
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed."
        )
    if key_type == GROUP_KEY_TYPE:
        topic, partition = OFFSETS_TOPIC, broker.groups.partition_for(key)
    elif key_type == TRANSACTION_KEY_TYPE:
        if not key:
            return _failed(ErrorCode.INVALID_REQUEST, "empty transactional id")
        broker.transactions.ensure_topic()
        topic, partition = TXN_TOPIC, broker.transactions.partition_for(key)
    else:
        return _failed(ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}")
    state = broker.cluster.topic(topic)
    if state is not None and partition < len(state.partitions):
        leader = state.partitions[partition].leader
        node = broker.cluster.broker(leader)
        address = node.address(ctx.listener) if node is not None else None
        if address is not None:
            return {
                "error_code": 0,
                "error_message": None,
                "node_id": leader,
                "host": address[0],
                "port": address[1],
            }
    return _failed(
        ErrorCode.COORDINATOR_NOT_AVAILABLE, f"the coordinator partition {topic}-{partition} has no leader"
    )


def _failed(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    key_type = req.key_type if ctx.version >= 1 else GROUP_KEY_TYPE
    if ctx.version >= 4:
        coordinators = [{"key": key, **_lookup(ctx, key_type, key)} for key in req.coordinator_keys]
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    return {"throttle_time_ms": 0, **_lookup(ctx, key_type, req.key)}


registry.register(API_KEY, 0, 6, handle)
