"""Request and response headers.

Request header v1: api_key INT16, api_version INT16, correlation_id INT32,
client_id NULLABLE_STRING (INT16 length). v2 adds a TAG_BUFFER after client_id
(client_id keeps its INT16 length even in v2). Only ApiVersions v3+ uses v2
among the versions minikafka serves.

Response header v0: correlation_id INT32 (ApiVersions answers use v0 always).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from protocol.errors import ProtocolError
from protocol.primitives import TaggedFields

_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

API_VERSIONS_KEY = 18


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # header bytes, i.e. where the body starts


def uses_flexible_header(api_key: int, api_version: int) -> bool:
    """Request header v2 applies only to ApiVersions v3+ among the APIs we serve."""
    return api_key == API_VERSIONS_KEY and api_version >= 3


def parse_request_header(frame: bytes | memoryview) -> RequestHeader:
    """Parse the header at the start of a request frame (size prefix already removed)."""
    if len(frame) < 10:
        raise ProtocolError("request header cut short")
    api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
    (n,) = _I16.unpack_from(frame, 8)
    pos = 10
    client_id: str | None = None
    if n >= 0:
        if pos + n > len(frame):
            raise ProtocolError("client_id exceeds the frame")
        try:
            client_id = bytes(frame[pos : pos + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("client_id is not valid UTF-8") from None
        pos += n
    elif n != -1:
        raise ProtocolError(f"invalid client_id length {n}")
    if uses_flexible_header(api_key, api_version):
        stream = io.BytesIO(bytes(frame[pos:]))
        TaggedFields.parse_stream(stream)
        pos += stream.tell()
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    out = _HEAD.pack(api_key, api_version, correlation_id)
    if client_id is None:
        out += b"\xff\xff"
    else:
        cid = client_id.encode("utf-8")
        out += _I16.pack(len(cid)) + cid
    if uses_flexible_header(api_key, api_version):
        out += b"\x00"
    return out


def frame_response(correlation_id: int, body: bytes) -> bytes:
    """Size prefix + response header v0 + body."""
    return _I32.pack(len(body) + 4) + _I32.pack(correlation_id) + body
