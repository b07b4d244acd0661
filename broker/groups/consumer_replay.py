"""Rebuilding consumer-protocol groups (KIP-848) from their `__consumer_offsets` records on load.

Records arrive in log order; the last value of each key wins and a tombstone
removes it (`broker.groups.consumer_records` has the formats). A group exists
if any of its records survives; members are those with a
ConsumerGroupMemberMetadata record, with their current assignment (epoch,
state, partitions) and target assignment when those exist too.
"""

from __future__ import annotations

from typing import Any

from broker.groups.consumer_model import ConsumerGroup, ConsumerMember, MemberState
from broker.groups.consumer_records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    ConsumerKey,
    assignment_of,
    classic_metadata_of,
    decode_value,
)


class ConsumerReplay:
    def __init__(self) -> None:
        self._values: dict[ConsumerKey, Any] = {}

    def apply(self, key: ConsumerKey, value: bytes | None) -> None:
        """One record; raises `ProtocolError` for a malformed value."""
        if value is None:
            self._values.pop(key, None)
        else:
            self._values[key] = decode_value(key.kind, value)

    def groups(self) -> dict[str, ConsumerGroup]:
        out: dict[str, ConsumerGroup] = {}
        members: dict[tuple[str, str], dict[int, Any]] = {}
        for key, value in self._values.items():
            cg = out.setdefault(key.group, ConsumerGroup())
            if key.kind == GROUP_METADATA:
                cg.group_epoch = value.epoch
            elif key.kind == TARGET_ASSIGNMENT_METADATA:
                cg.assignment_epoch = value.assignment_epoch
            elif key.kind == PARTITION_METADATA:
                cg.subscription_metadata = {
                    t.topic_name: (t.topic_id, t.num_partitions) for t in value.topics
                }
            elif key.kind == TARGET_ASSIGNMENT_MEMBER:
                cg.target[key.member or ""] = assignment_of(value.topic_partitions)
            else:
                members.setdefault((key.group, key.member or ""), {})[key.kind] = value
        for (group_id, member_id), parts in members.items():
            meta = parts.get(MEMBER_METADATA)
            if meta is None:
                continue  # an assignment without its member: the member was removed
            current = parts.get(CURRENT_MEMBER_ASSIGNMENT)
            member = ConsumerMember(
                member_id,
                instance_id=meta.instance_id,
                rack_id=meta.rack_id,
                client_id=meta.client_id,
                client_host=meta.client_host,
                subscribed_topic_names=tuple(meta.subscribed_topic_names),
                subscribed_topic_regex=meta.subscribed_topic_regex,
                rebalance_timeout_ms=meta.rebalance_timeout_ms,
                server_assignor=meta.server_assignor,
                classic=classic_metadata_of(meta),
            )
            if current is not None:
                try:
                    state = MemberState(current.state)
                except ValueError:
                    state = MemberState.UNKNOWN
                member = member.with_(
                    member_epoch=current.member_epoch,
                    previous_member_epoch=current.previous_member_epoch,
                    state=state,
                    assigned=assignment_of(current.assigned_partitions),
                    pending_revocation=assignment_of(current.partitions_pending_revocation),
                )
            out[group_id].set_member(member)
        for cg in out.values():
            for member_id in [m for m in cg.target if m not in cg.members]:
                del cg.target[member_id]
        return out
