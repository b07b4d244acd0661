"""KIP-392 follower fetching: the replica a consumer should read from, as Kafka's RackAwareReplicaSelector picks it.

With ``replica.selector.class`` set to `RACK_AWARE`, the leader of a partition
answers a consumer's Fetch (v11+ carries the consumer's ``client.rack`` as
``rack_id``) with a ``preferred_read_replica`` and no records when a replica
in the consumer's rack can serve it; the consumer then fetches from that
replica, which serves it up to its own high watermark. The rules are Kafka's
(ReplicaManager.findPreferredReadReplica, RackAwareReplicaSelector.select,
ReplicaView.comparator):

- only a leader picks, only for consumers (replica id < 0) that name a rack;
- candidates are the leader and the followers in the committed ISR whose
  last fetch of this leadership put their log end offset at or past the
  consumer's fetch offset and their log start offset at or below it (a
  follower not heard from since this broker began leading is no candidate);
- a broker's rack counts only if it is registered and reachable on the
  listener the consumer came in on (Kafka's replica endpoints for that
  listener; a broker without one is a node with no rack);
- the leader is chosen when it is in the consumer's rack or no candidate is;
  otherwise the candidate in that rack with the highest log end offset, then
  the one caught up with the leader most recently, then the highest broker id;
- choosing the leader answers -1: Kafka never names the leader itself.

Per partition and request, never per record; the leader-in-the-rack case
costs one lookup.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.replica.partition import Partition

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER = -1


def preferred_read_replica(
    part: Partition,
    client_rack: str,
    fetch_offset: int,
    now_ms: int,
    rack_of: Callable[[int], str | None],
) -> int:
    """The follower of ``part`` (led here) that a consumer in ``client_rack`` should fetch
    ``fetch_offset`` from, or `LEADER` (-1). ``rack_of``: a broker's rack, None when it has none
    or is not reachable on the consumer's listener."""
    if not client_rack or rack_of(part.local_id) == client_rack:
        return LEADER
    best = LEADER
    best_key: tuple[int, int, int] | None = None
    for replica in part.isr:
        if replica == part.local_id:
            continue
        leo = part.follower_leo.get(replica, -1)
        if leo < fetch_offset or part.follower_log_start.get(replica, -1) > fetch_offset:
            continue
        if rack_of(replica) != client_rack:
            continue
        # most caught up: highest LEO, then shortest time since caught up, then highest id
        key = (leo, -(now_ms - part.caught_up_ms.get(replica, 0)), replica)
        if best_key is None or key > best_key:
            best, best_key = replica, key
    return best
