"""The feature levels ApiVersions v3+ reports (KIP-584), with the names and levels of Kafka 4.1.

What a newly formatted default Kafka 4.1 cluster finalizes, for the features this broker
implements:

- ``metadata.version`` 27 is Kafka 4.1-IV1, the protocol level whose API versions
  this broker advertises; 7 (3.3-IV3) is the oldest Kafka 4.1 accepts.
- ``group.version`` 1 enables the consumer group protocol (KIP-848); a broker
  that does not serve ConsumerGroupHeartbeat reports level 0.
- ``transaction.version`` 2: transactions v2 (KIP-890 part 2). A client that reads it
  (the Java producer from 4.0) uses EndTxn and TxnOffsetCommit v5 and Produce v12+, sends
  no AddPartitionsToTxn / AddOffsetsToTxn, and takes a new epoch at each commit or abort;
  clients that do not read it keep the older protocol, which is served alongside.

Left out: ``eligible.leader.replicas.version`` (Kafka 4.1 finalizes 1: KIP-966's eligible
leader replicas, which this ZooKeeper-style replication does not keep), ``share.version``
(share groups, not served) and ``kraft.version`` (no KRaft quorum here).

Features are fixed for the life of the process, so the finalized epoch is 0. They are not
negotiated across a cluster as Kafka's controller does: every broker of a cluster must run a
minikafka that implements them (a broker from before transactions v2 would take a Produce v12 for
a v11 and add nothing to the transaction).
"""

from __future__ import annotations

from typing import Any

from broker import registry

CONSUMER_GROUP_HEARTBEAT = 68

FINALIZED_EPOCH = 0


def _levels() -> dict[str, tuple[int, int, int]]:
    """name -> (supported min, supported max, finalized level)."""
    group = 1 if CONSUMER_GROUP_HEARTBEAT in registry.HANDLERS else 0
    return {
        "group.version": (0, group, group),
        "metadata.version": (7, 27, 27),
        "transaction.version": (0, 2, 2),
    }


def supported(omit_min_zero: bool = False) -> list[dict[str, Any]]:
    """Supported ranges; ``omit_min_zero`` (ApiVersions below v4) leaves out the features whose
    minimum is 0, which older clients fail to read (Kafka's KAFKA-17492)."""
    return [
        {"name": n, "min_version": lo, "max_version": hi}
        for n, (lo, hi, _) in sorted(_levels().items())
        if not (omit_min_zero and lo == 0)
    ]


def finalized() -> list[dict[str, Any]]:
    """Finalized levels; a level-0 feature is left out, as Kafka leaves out features that are off."""
    return [
        {"name": n, "max_version_level": level, "min_version_level": level}
        for n, (_, _, level) in sorted(_levels().items())
        if level > 0
    ]
