"""The topics of a classic consumer group member's subscription, as the broker needs them.

A member of a group whose protocol type is "consumer" sends, as its JoinGroup
protocol metadata, Kafka's ConsumerProtocolSubscription: ``version INT16`` then
``topics ARRAY(STRING)`` (INT32 count, INT16-length UTF-8 strings) and fields the
broker does not need. OffsetDelete asks whether a group still consumes a topic
(GROUP_SUBSCRIBED_TO_TOPIC); the full codec lives with the client's assignors.
"""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topic names in ``metadata``, or None if it is not a readable subscription."""
    try:
        (version,) = _I16.unpack_from(metadata, 0)
        (count,) = _I32.unpack_from(metadata, 2)
        if version < 0 or count < 0 or count > len(metadata):
            return None
        topics, pos = set(), 6
        for _ in range(count):
            (size,) = _I16.unpack_from(metadata, pos)
            end = pos + 2 + size
            if size < 0 or end > len(metadata):
                return None
            topics.add(bytes(metadata[pos + 2 : end]).decode())
            pos = end
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
