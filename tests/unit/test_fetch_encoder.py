"""The Fetch fast-path encoder produces exactly the bytes of the declared construct schema."""

from __future__ import annotations

import uuid

import pytest

from protocol.messages import decode_response, encode_response, encode_response_parts
from protocol.messages.fetch import RESPONSE


def sample(records: list[bytes | None], aborted: list[dict[str, int]] | None) -> dict[str, object]:
    return {
        "throttle_time_ms": 7,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "tópico",
                "topic_id": uuid.UUID(int=7),  # v13+ name topics by ID
                "partitions": [
                    {
                        "partition_index": i,
                        "error_code": 0 if rec is not None else 1,
                        "high_watermark": 1 << 40,
                        "last_stable_offset": 99,
                        "log_start_offset": 3,
                        "aborted_transactions": aborted if i == 0 else [],
                        "preferred_read_replica": -1,
                        "records": rec,
                    }
                    for i, rec in enumerate(records)
                ],
            },
            {"topic": "empty", "topic_id": uuid.UUID(int=8), "partitions": []},
        ],
    }


@pytest.mark.parametrize("version", sorted(RESPONSE))
@pytest.mark.parametrize("aborted", [None, [], [{"producer_id": 5, "first_offset": 10}]])
def test_parts_equal_schema_bytes(version: int, aborted: list[dict[str, int]] | None) -> None:
    resp = sample([b"", b"x" * 10, None, bytes(range(256)) * 40, b"y" * 5000], aborted)
    parts = encode_response_parts(1, version, resp)
    joined = b"".join(parts)
    assert joined == encode_response(1, version, resp)
    assert decode_response(1, version, joined).responses[0].partitions[3].records == bytes(range(256)) * 40
    big = [p for p in parts if len(p) >= 5000]
    assert big, "large record sets travel as their own chunks"
