"""Where a partition's leader is now, for the answers that tell a client it asked the wrong broker.

KIP-951: Produce v10+ and Fetch v12+ (endpoints from v16) answer a partition's
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH with the leader and leader
epoch this broker knows of (``current_leader``), and the response lists
those leaders' addresses on the listener the request came in on
(``node_endpoints``), so the client can go there without a Metadata round trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from broker.context import RequestContext
from protocol.errors import ErrorCode

WRONG_LEADER = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def current_leader(ctx: RequestContext, topic: str, index: int) -> dict[str, int]:
    """{leader_id, leader_epoch} of ``topic``-``index`` as this broker knows them (-1, -1: unknown)."""
    state = ctx.broker.cluster.topic(topic)
    if state is not None and 0 <= index < len(state.partitions):
        p = state.partitions[index]
        return {"leader_id": p.leader, "leader_epoch": p.leader_epoch}
    return {"leader_id": -1, "leader_epoch": -1}


def node_endpoints(ctx: RequestContext, node_ids: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """{node_id, host, port, rack} of each live broker in ``node_ids`` (None: every live broker), by
    node id, at its address on the listener the request came in on. Like Kafka, a broker without
    that listener is left out. Metadata's broker list is this too."""
    cluster = ctx.broker.cluster
    nodes = cluster.brokers() if node_ids is None else [cluster.broker(n) for n in sorted(set(node_ids))]
    out = []
    for node in nodes:
        address = None if node is None else node.address(ctx.listener)
        if node is not None and address is not None:
            out.append({"node_id": node.node_id, "host": address[0], "port": address[1], "rack": node.rack})
    return out
