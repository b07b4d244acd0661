"""Request frames captured from the real clients (tests/capture_frames.py) decode and re-encode byte for byte."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.headers import encode_request_header, parse_request_header
from protocol.messages import MODULES, decode_request, encode_request
from protocol.records import validate_batches

FRAMES = sorted((Path(__file__).resolve().parent.parent / "data" / "frames").glob("*/*.bin"))


def test_frames_are_present() -> None:
    clients = {p.parent.name for p in FRAMES}
    assert {
        "kafka-python",
        "aiokafka",
        "confluent-kafka",
        "kafkajs",
        "platformatic-1",
        "platformatic-2",
    } <= clients
    names = {f"{p.parent.name}/{p.stem}" for p in FRAMES}
    # the newest versions as real clients send them: librdkafka's KIP-848 heartbeat, platformatic's Fetch v17
    assert {
        "confluent-kafka/68-v1",
        "confluent-kafka/08-v9",
        "platformatic-2/01-v17",
        "platformatic-2/00-v11",
    } <= names


@pytest.mark.parametrize("path", FRAMES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_captured_frame_round_trips(path: Path) -> None:
    frame = path.read_bytes()
    header = parse_request_header(frame)
    if header.api_version not in MODULES[header.api_key].REQUEST:
        # e.g. kafka-python's ApiVersions v4 probe, answered by the v0 fallback without decoding
        assert header.api_key == 18
        return
    request = decode_request(header.api_key, header.api_version, frame[header.size :])
    again = encode_request_header(header.api_key, header.api_version, header.correlation_id, header.client_id)
    if header.api_key == 18 and header.api_version >= 3:
        again = frame[: header.size]  # tagged fields of the v2 header are not modelled
    assert again + encode_request(header.api_key, header.api_version, request) == frame
    if header.api_key == 0:
        for topic in request.topic_data:
            for part in topic.partition_data:
                assert validate_batches(part.records)


SERVED = [
    p
    for p in FRAMES
    if parse_request_header(p.read_bytes()).api_version
    in MODULES[parse_request_header(p.read_bytes()).api_key].REQUEST
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SERVED), st.data())
def test_mutated_frames_raise_only_protocol_error_and_stay_small(path: Path, data: st.DataObject) -> None:
    """Client frames with random bytes overwritten, cut or appended: ProtocolError or a request,
    and the decoder never allocates far beyond the frame (no trusting of counts or lengths)."""
    frame = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(frame) - 1))
        frame[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        frame = frame[: data.draw(st.integers(10, len(frame)))]
    tracemalloc.start()
    try:
        header = parse_request_header(bytes(frame))
        if header.api_key in MODULES and header.api_version in MODULES[header.api_key].REQUEST:
            decode_request(header.api_key, header.api_version, bytes(frame[header.size :]))
    except ProtocolError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 64 * len(frame) + (1 << 20), f"decoder peaked at {peak} bytes for a {len(frame)}-byte frame"
