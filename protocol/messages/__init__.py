"""Request/response schemas, one module per API, and the codec entry points.

Each module is generated from Kafka's message JSON (`protocol.gen_messages`)
and defines `API_KEY`, `NAME`, `VERSIONS`, `FLEXIBLE`, `REQUEST` and `RESPONSE`:
dicts from version to a `protocol.schema.Message` (a construct `Struct`).
Decoded messages are construct `Container`s (dict-like, attribute access) with
snake_case field names taken from Kafka's message definitions; responses are built from plain dicts with the same names.
Record sets stay opaque `bytes`.
"""

from __future__ import annotations

import importlib
import io
import struct
from types import ModuleType
from typing import Any

from construct import ConstructError, Container

from protocol import fetch_fast, flexible_fast, heartbeat_fast, produce_fast
from protocol.api_keys import API_KEYS
from protocol.errors import ProtocolError
from protocol.fast_reader import HasTaggedFields

MODULES: dict[int, ModuleType] = {
    key: importlib.import_module(f"protocol.messages.{module}")
    for key, (_, module, *_rest) in API_KEYS.items()
}

# {api_key: Kafka's API name} for logs and errors, e.g. API_NAMES[0] == "Produce".
API_NAMES: dict[int, str] = {key: m.NAME for key, m in MODULES.items()}

# Hand-written encoders of the hot responses: {api_key: [(versions they cover, encoder), ...]}.
_FAST_ENCODERS = {
    0: [
        (produce_fast.VERSIONS, produce_fast.encode_response_parts),
        (flexible_fast.PRODUCE_RESPONSE_VERSIONS, flexible_fast.encode_produce_response),
    ],
    1: [
        (fetch_fast.VERSIONS, fetch_fast.encode_response_parts),
        (flexible_fast.FETCH_VERSIONS, flexible_fast.encode_fetch_response),
    ],
    68: [(heartbeat_fast.VERSIONS, heartbeat_fast.encode_heartbeat_response)],
}


# What a hand-written encoder raises for a value the schema would refuse (answered as ProtocolError).
_FAST_ENCODE_ERRORS = (KeyError, TypeError, AttributeError, struct.error, UnicodeEncodeError)


def register(module: ModuleType) -> None:
    MODULES[module.API_KEY] = module
    API_NAMES[module.API_KEY] = module.NAME


def _schema(table: str, api_key: int, version: int) -> Any:
    module = MODULES.get(api_key)
    if module is None:
        raise ProtocolError(f"unknown api key {api_key}")
    schema = getattr(module, table).get(version)
    if schema is None:
        raise ProtocolError(f"{module.NAME} v{version} has no schema")
    return schema


def _decode(table: str, api_key: int, version: int, body: bytes | memoryview, offset: int = 0) -> Container:
    schema = _schema(table, api_key, version)
    # BytesIO shares a bytes object's buffer instead of copying it (it copies a memoryview), so a
    # caller holding the whole frame as bytes passes it with the body's offset: the record sets
    # of a 1 MB Produce are then copied once (by the read that takes them), not twice.
    stream = io.BytesIO(body)
    if offset:
        stream.seek(offset)
    try:
        obj = schema.parse_stream(stream)
    except ProtocolError:
        raise
    except (ConstructError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"malformed {table.lower()} api {api_key} v{version}: {exc}") from None
    return obj


def decode_request(api_key: int, version: int, body: bytes | memoryview, offset: int = 0) -> Container:
    """Decode the request body at ``body[offset:]``; any malformed input raises ProtocolError."""
    if not 0 <= offset <= len(body):
        raise ProtocolError(f"body offset {offset} outside 0..{len(body)}")
    try:
        if api_key == 0:  # the hot path: precompiled structs
            if version in produce_fast.REQUEST_VERSIONS:
                return produce_fast.decode_produce_request(body, offset)
            if version in flexible_fast.PRODUCE_REQUEST_VERSIONS:
                return flexible_fast.decode_produce_request(body, offset, version)
        elif api_key == 1:  # every consumer and follower round trip: the same
            if version in fetch_fast.VERSIONS:
                return fetch_fast.decode_fetch_request(body, version, offset)
            if version in flexible_fast.FETCH_VERSIONS:
                return flexible_fast.decode_fetch_request(body, version, offset)
        elif api_key == 68 and version in heartbeat_fast.VERSIONS:  # every KIP-848 member, every few seconds
            return heartbeat_fast.decode_heartbeat_request(body, version, offset)
    except HasTaggedFields:
        pass  # the schema names and checks them
    return _decode("REQUEST", api_key, version, body, offset)


def decode_response(api_key: int, version: int, body: bytes | memoryview) -> Container:
    """Decode a response body (used by our client and the tests)."""
    if api_key == 68 and version in heartbeat_fast.VERSIONS:
        try:
            return heartbeat_fast.decode_heartbeat_response(body, version)
        except HasTaggedFields:
            pass  # the schema names and checks them
    return _decode("RESPONSE", api_key, version, body)


def _encode(table: str, api_key: int, version: int, obj: dict[str, Any]) -> bytes:
    schema = _schema(table, api_key, version)
    try:
        return schema.build(obj)
    except ProtocolError:
        raise
    except (ConstructError, ValueError, OverflowError, KeyError, TypeError) as exc:
        raise ProtocolError(f"cannot encode {table.lower()} api {api_key} v{version}: {exc}") from None


def encode_request(api_key: int, version: int, obj: dict[str, Any]) -> bytes:
    if api_key == 68 and version in heartbeat_fast.VERSIONS:
        try:
            return heartbeat_fast.encode_heartbeat_request(version, obj)
        except _FAST_ENCODE_ERRORS as exc:
            raise ProtocolError(f"cannot encode request api 68 v{version}: {exc}") from None
    return _encode("REQUEST", api_key, version, obj)


def encode_response(api_key: int, version: int, obj: dict[str, Any]) -> bytes:
    return _encode("RESPONSE", api_key, version, obj)


def encode_response_parts(api_key: int, version: int, obj: dict[str, Any]) -> list[bytes]:
    """The response body as chunks to write in order (same bytes as `encode_response`).

    Produce, Fetch and ConsumerGroupHeartbeat responses of the versions `_FAST_ENCODERS`
    covers are built with precompiled structs (Fetch's record sets are not copied); the
    rest, and those with fields the fast encoders leave to the schema, are
    built by their construct schema as one chunk.
    """
    for versions, fast in _FAST_ENCODERS.get(api_key, ()):
        if version in versions:
            try:
                return fast(version, obj)
            except flexible_fast.NeedsSchema:
                break  # fields the fast encoder leaves to the schema
            except _FAST_ENCODE_ERRORS as exc:
                raise ProtocolError(f"cannot encode response api {api_key} v{version}: {exc}") from None
    return [encode_response(api_key, version, obj)]


def error_response(api_key: int, version: int, code: int) -> dict[str, Any] | None:
    """A response carrying `code` in its top-level error_code, everything else empty.

    For answering a request whose handler failed unexpectedly. APIs without a
    top-level error_code (their errors live per topic or partition) return
    None: the caller closes the connection instead, and the client retries.
    """
    from protocol.messages.samples import example

    schema = _schema("RESPONSE", api_key, version)
    if "error_code" not in {sc.name for sc in schema.subcons}:
        return None
    obj = example(schema, "empty")
    obj["error_code"] = code
    return obj
