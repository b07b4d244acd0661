"""The feature levels ApiVersions v3+ reports (KIP-584), with the names and levels of Kafka 4.0.

- ``metadata.version`` 25 is Kafka 4.0-IV3, the protocol level whose API versions
  this broker advertises; 7 (3.3-IV3) is the oldest Kafka 4.0 accepts.
- ``group.version`` 1 enables the consumer group protocol (KIP-848); a broker
  that does not serve ConsumerGroupHeartbeat reports level 0.
- ``transaction.version`` 0: transactions work with the protocol clients have always
  spoken (AddPartitionsToTxn, EndTxn v0-4). Level 2 would tell them to use transactions
  v2 (KIP-890 part 2: EndTxn and TxnOffsetCommit v5, Produce v12+ adding its partition to
  the transaction itself, an epoch bump per transaction), which this broker does not
  implement; a Java producer reads the level and stays at Produce v11 and EndTxn v4 below 2.

Features are fixed for the life of the process, so the finalized epoch is 0.
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
        "metadata.version": (7, 25, 25),
        "transaction.version": (0, 0, 0),
    }


def supported() -> list[dict[str, Any]]:
    return [{"name": n, "min_version": lo, "max_version": hi} for n, (lo, hi, _) in sorted(_levels().items())]


def finalized() -> list[dict[str, Any]]:
    """Finalized levels; a level-0 feature is left out, as Kafka leaves out features that are off."""
    return [
        {"name": n, "max_version_level": level, "min_version_level": level}
        for n, (_, _, level) in sorted(_levels().items())
        if level > 0
    ]
