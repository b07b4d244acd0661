"""JoinGroup: v0-9.

Behavior:
- Hands the request to the group coordinator (broker/groups/coordinator.py) and
  answers when it does: at once for errors, MEMBER_ID_REQUIRED and followers of
  a Stable group; otherwise when the rebalance completes (after
  group.initial.rebalance.delay.ms for a new group, or once every member has
  rejoined, at the latest after the rebalance timeout). Other requests, on this
  and other connections, keep being processed meanwhile.
- Only the leader's response lists the members, with their metadata for the
  protocol chosen by vote.
- Session timeouts outside [group.min.session.timeout.ms,
  group.max.session.timeout.ms]: INVALID_SESSION_TIMEOUT; empty group id:
  INVALID_GROUP_ID; no protocol in common: INCONSISTENT_GROUP_PROTOCOL.
- Into a KIP-848 group with members, the member joins as a classic member of
  it (broker/groups/classic_members.py): answered at once, as a follower, at
  generation = its member epoch, with the broker's assignment in SyncGroup.
Version notes: v0 has no rebalance timeout (the session timeout is used);
  v4+ new dynamic members get MEMBER_ID_REQUIRED first; v5 adds
  group_instance_id (static membership; FENCED_INSTANCE_ID for a duplicate);
  v6 is flexible; v7 answers the group's protocol_type (null on errors); v8
  adds the member's reason (KIP-800), logged with the rebalance it causes; v9
  answers skip_assignment: a static leader rejoining a Stable group under a new
  member id is told it leads, with the members, and to skip the assignment
  (KIP-814; before v9 it is answered with the old leader id and no members).
- Authorization (with an authorizer configured), as KafkaApis: READ on the
  group, else GROUP_AUTHORIZATION_FAILED and nothing else happens.
Leaves out: throttling; GROUP_MAX_SIZE_REACHED shedding of
  members already in an oversized group.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups import deferred
from broker.groups.model import JoinRequest, JoinResult
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 11


def client_host(ctx: RequestContext) -> str:
    """The peer address as Kafka reports it (``/127.0.0.1``)."""
    return "/" + ctx.peer.rpartition(":")[0]


def handle(ctx: RequestContext, req: Any) -> Any:
    version = ctx.version
    join = JoinRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id if version >= 5 else None,
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=version >= 4 and (version < 5 or req.group_instance_id is None),
        reason=req.reason if version >= 8 else None,
        skip_assignment_supported=version >= 9,
    )

    def respond(result: JoinResult) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": result.error,
            "generation_id": result.generation_id,
            "protocol_type": None if result.error else req.protocol_type,
            "skip_assignment": result.skip_assignment,
            "protocol_name": result.protocol_name,
            "leader": result.leader_id,
            "member_id": result.member_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                for m in result.members
            ],
        }

    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return respond(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, ""))
    return deferred(lambda cb: ctx.broker.groups.join_group(join, cb), respond)


registry.register(API_KEY, 0, 9, handle)
