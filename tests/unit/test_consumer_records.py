"""The directly written KIP-848 assignment records are byte for byte what their schemas build.

`target_member_record` and `assignment_record` write their values without construct (a
rebalance writes one or two per member); `encode_value` of the same fields is the reference,
and `decode_value` reads them back to the same assignment.
"""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.groups.consumer_model import ConsumerMember, MemberState
from broker.groups.consumer_records import (
    CURRENT_MEMBER_ASSIGNMENT,
    TARGET_ASSIGNMENT_MEMBER,
    assignment_of,
    assignment_record,
    assignment_value,
    decode_value,
    encode_value,
    target_member_record,
    topic_partitions,
)

uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
assignments = st.dictionaries(uuids, st.frozensets(st.integers(0, 2**31 - 1), max_size=6), max_size=4)
epochs = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=200, deadline=None)
@given(assignment=assignments)
def test_target_member_record_is_the_schemas_bytes(assignment: dict[uuid.UUID, frozenset[int]]) -> None:
    _, value = target_member_record("g", "m", assignment)
    assert value == encode_value(TARGET_ASSIGNMENT_MEMBER, {"topic_partitions": topic_partitions(assignment)})
    decoded = decode_value(TARGET_ASSIGNMENT_MEMBER, value)
    assert assignment_of(decoded.topic_partitions) == {t: p for t, p in assignment.items() if p}


@settings(max_examples=200, deadline=None)
@given(
    assigned=assignments,
    pending=assignments,
    epoch=epochs,
    previous=epochs,
    state=st.sampled_from(list(MemberState)),
)
def test_assignment_record_is_the_schemas_bytes(
    assigned: dict[uuid.UUID, frozenset[int]],
    pending: dict[uuid.UUID, frozenset[int]],
    epoch: int,
    previous: int,
    state: MemberState,
) -> None:
    member = ConsumerMember(
        "m", member_epoch=epoch, previous_member_epoch=previous, state=state, assigned=assigned,
        pending_revocation=pending,
    )  # fmt: skip
    _, value = assignment_record("g", member)
    assert value == encode_value(CURRENT_MEMBER_ASSIGNMENT, assignment_value(member))
    decoded = decode_value(CURRENT_MEMBER_ASSIGNMENT, value)
    assert (decoded.member_epoch, decoded.previous_member_epoch, decoded.state) == (
        epoch,
        previous,
        int(state),
    )
    assert assignment_of(decoded.assigned_partitions) == {t: p for t, p in assigned.items() if p}


def test_topic_ids_are_ordered_as_their_text() -> None:
    ids = [uuid.UUID(int=n) for n in (1 << 127, 5, 1 << 64, 0xFF << 60, 7 << 100)]
    listed = [tp["topic_id"] for tp in topic_partitions({tid: frozenset({0}) for tid in ids})]
    assert listed == sorted(ids, key=str)
