"""Request and response headers.

Request header v1: api_key INT16, api_version INT16, correlation_id INT32,
client_id NULLABLE_STRING (INT16 length). v2 adds a TAG_BUFFER after client_id
(client_id keeps its INT16 length even in v2); a request uses v2 from its API's
first flexible version on (`protocol.api_keys`).

Response header v0: correlation_id INT32. v1 adds a TAG_BUFFER after it, for
flexible versions of every API except ApiVersions, whose answers use v0 always
(a client reads them before it knows which versions the broker speaks).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from protocol.api_keys import API_KEYS
from protocol.errors import ProtocolError
from protocol.varint import decode_uvarint

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


# api key -> its first flexible version (APIs with no flexible version are absent)
_FLEXIBLE_FROM = {key: entry[4] for key, entry in API_KEYS.items() if entry[4] is not None}
_NEVER = 1 << 16  # above every version: an API without flexible versions


def uses_flexible_header(api_key: int, api_version: int) -> bool:
    """Whether a request of this API version has header v2 (a flexible version)."""
    return api_version >= _FLEXIBLE_FROM.get(api_key, _NEVER)


def uses_response_header_v1(api_key: int, api_version: int) -> bool:
    """Whether a response of this API version has header v1: flexible versions, but never ApiVersions."""
    return api_key != API_VERSIONS_KEY and api_version >= _FLEXIBLE_FROM.get(api_key, _NEVER)


def response_header_size(api_key: int, api_version: int) -> int:
    """Bytes of the response header after the size prefix: 4 (v0) or 5 (v1, an empty TAG_BUFFER).

    Only for headers we write ourselves; `skip_response_header` reads any v1 header.
    """
    if api_key == API_VERSIONS_KEY or api_version < _FLEXIBLE_FROM.get(api_key, _NEVER):
        return 4
    return 5


def skip_tag_buffer(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """The position after the TAG_BUFFER at ``buf[pos:]``; ProtocolError if it runs past the end."""
    count, pos = decode_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = decode_uvarint(buf, pos)
        size, pos = decode_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise ProtocolError("tagged field exceeds the frame")
    return pos


def skip_response_header(frame: bytes | bytearray | memoryview, api_key: int, api_version: int) -> int:
    """Where the body of a response frame (size prefix removed) starts."""
    return skip_tag_buffer(frame, 4) if uses_response_header_v1(api_key, api_version) else 4


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
    if api_version >= _FLEXIBLE_FROM.get(api_key, _NEVER):
        if pos < len(frame) and frame[pos] == 0:  # the usual empty TAG_BUFFER
            pos += 1
        else:
            pos = skip_tag_buffer(frame, pos)
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
    """Size prefix + response header v0 + body (the ApiVersions fallback answer)."""
    return _I32.pack(len(body) + 4) + _I32.pack(correlation_id) + body
