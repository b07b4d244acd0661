"""Differential tests: our schemas against kafka-python 3.0's protocol classes.

kafka-python 3.0 has two independent sets of message classes:

- the new `ApiMessage` classes (kafka.protocol.{producer,consumer,metadata,admin,sasl}),
  generated at import time from copies of Kafka's own message JSON files, with
  snake_case field names produced the same way as ours. `Cls(version=v, **fields)`
  builds one, `.encode(version=v)` / `Cls.decode(data, version=v)` do the wire
  work. These are the primary oracle: values and field names are compared.
- the legacy hand-written `Struct` classes (kafka.protocol.old, `XxxRequest_vN`),
  used here as a second, bytes-level oracle: they must parse our encoding and
  re-encode it to the same bytes.

Known oracle quirks handled here:
- ApiVersionsResponse.decode reads any body with a non-zero error_code as v0
  (its UNSUPPORTED_VERSION fallback), so ApiVersions response samples use error_code 0.
- DescribeGroupsResponse patches authorized_operations to a "bitfield": a set of
  bit numbers, None for INT32 MIN_VALUE ("not requested"); we convert both ways.
- Flexible messages: kafka-python maps known tags to named fields, as we do;
  both write a tagged field only when it differs from its default.
- Objects from ApiMessage.decode lack the `_header` slot that encode() reads;
  the test sets it to None before re-encoding.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from typing import Any

import pytest

from protocol.messages import (
    API_NAMES,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    samples,
)

# kafka-python reads its bundled JSON with importlib.resources.open_text at import
# time, which warns on Python 3.11; pytest turns warnings into errors.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol import admin, consumer, metadata, producer, sasl
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.old.api import Request as LegacyRequest
    from kafka.protocol.old.api import Response as LegacyResponse

SCHEMAS = list(samples.all_schemas())
INT32_MIN = -(1 << 31)


def _id(entry: tuple[int, int, str, Any]) -> str:
    key, version, kind, _ = entry
    return f"{API_NAMES[key]}-v{version}-{kind}"


def _message_classes() -> dict[tuple[int, str], type[ApiMessage]]:
    """{(api_key, "request"/"response"): ApiMessage class} from kafka-python's public packages."""
    found: dict[tuple[int, str], type[ApiMessage]] = {}
    for package in (producer, consumer, metadata, admin, sasl):
        for name in package.__all__:
            cls = getattr(package, name)
            if isinstance(cls, type) and issubclass(cls, ApiMessage):
                found[(cls.API_KEY, cls.type)] = cls
    return found


def _legacy_classes() -> dict[tuple[int, int, str], type]:
    """{(api_key, version, kind): class} for kafka.protocol.old's XxxRequest_vN / XxxResponse_vN."""
    import kafka.protocol.old as old

    found: dict[tuple[int, int, str], type] = {}
    for info in pkgutil.iter_modules(old.__path__, old.__name__ + "."):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(info.name)
        for value in vars(module).values():
            if not (isinstance(value, type) and issubclass(value, LegacyRequest | LegacyResponse)):
                continue
            key, version = getattr(value, "API_KEY", None), getattr(value, "API_VERSION", None)
            if isinstance(key, int) and isinstance(version, int):
                kind = "request" if issubclass(value, LegacyRequest) else "response"
                found[(key, version, kind)] = value
    return found


CLASSES = _message_classes()
LEGACY = _legacy_classes()
# Legacy classes that disagree with Kafka's JSON (and with their own ApiMessage twin).
LEGACY_WRONG = {
    (
        35,
        0,
        "request",
    ): "kafka.protocol.old's DescribeLogDirsRequest_v0 has partitions as one INT32, not an array",
    (29, 2, "request"): "kafka.protocol.old's DescribeAclsRequest_v2 reuses v1's schema (v2 is flexible)",
    (29, 2, "response"): "kafka.protocol.old's DescribeAclsResponse_v2 reuses v1's schema (v2 is flexible)",
}
# kafka-python names every authorized-operations bitfield "authorized_operations".
_THEIR_NAMES = {
    "topic_authorized_operations": "authorized_operations",
    "cluster_authorized_operations": "authorized_operations",
}


def _their_class(key: int, version: int, kind: str) -> type[ApiMessage]:
    cls = CLASSES.get((key, kind))
    if cls is None:
        pytest.skip(f"kafka-python 3.0 has no ApiMessage class for {API_NAMES[key]} {kind}s")
    if not 0 <= version <= cls.max_version:
        pytest.skip(f"kafka-python's {cls.__name__} stops at v{cls.max_version}")
    return cls


def oracle_sample(key: int, schema: Any, variant: samples.Variant) -> Any:
    """samples.example, adjusted for the oracle quirks listed in the module docstring."""
    obj = samples.example(schema, variant)
    if key == 18 and "api_keys" in obj:
        obj["error_code"] = 0
    return obj


def _is_bitfield(field: Any) -> bool:
    return getattr(field, "type_str", None) == "bitfield"


def _to_bits(value: int) -> set[int] | None:
    if value == INT32_MIN:
        return None
    return {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}


def _from_bits(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    value = sum(1 << bit for bit in bits)
    return value - (1 << 32) if value >= 1 << 31 else value


def _fields_at(struct: Any, version: int) -> list[Any]:
    """Their fields of `version` in our order: regular ones, then tagged ones."""
    return [
        *struct.untagged_fields(version),
        *sorted(struct.tagged_fields(version)._fields, key=lambda f: f.tag),
    ]


def to_theirs(struct: Any, version: int, obj: dict[str, Any]) -> dict[str, Any]:
    """Our dict -> keyword arguments for their data class (nested data-class instances)."""
    kwargs: dict[str, Any] = {}
    for field in _fields_at(struct, version):
        value = obj[field.name]
        if field.is_struct_array():
            inner = field.array_of
            value = (
                None
                if value is None
                else [inner.data_class(version=version, **to_theirs(inner, version, v)) for v in value]
            )
        elif field.is_struct():
            value = (
                None
                if value is None
                else field.data_class(version=version, **to_theirs(field, version, value))
            )
        elif _is_bitfield(field):
            value = _to_bits(value)
        kwargs[field.name] = value
    return kwargs


def from_theirs(struct: Any, version: int, item: Any) -> dict[str, Any]:
    """Their decoded data class -> our dict shape (untagged fields only)."""
    out: dict[str, Any] = {}
    for field in _fields_at(struct, version):
        value = getattr(item, field.name)
        if field.is_struct_array():
            value = None if value is None else [from_theirs(field.array_of, version, v) for v in value]
        elif field.is_struct():
            value = None if value is None else from_theirs(field, version, value)
        elif _is_bitfield(field):
            value = _from_bits(value)
        elif isinstance(value, memoryview | bytearray):
            value = bytes(value)
        out[field.name] = value
    return out


def their_names(obj: Any) -> Any:
    """Our object with keys renamed as kafka-python names them (_THEIR_NAMES)."""
    if isinstance(obj, dict):
        return {_THEIR_NAMES.get(k, k): their_names(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [their_names(v) for v in obj]
    return obj


def without_tags(obj: Any) -> Any:
    """Drop our tagged_fields entries and construct's `_io` keys; Containers -> dicts."""
    if isinstance(obj, dict):
        return {k: without_tags(v) for k, v in obj.items() if k != "tagged_fields" and not k.startswith("_")}
    if isinstance(obj, list):
        return [without_tags(v) for v in obj]
    return obj


def field_names(struct: Any, version: int) -> list[Any]:
    """Their field-name tree: [name, ...] with (name, subtree) for struct arrays/structs."""
    names: list[Any] = []
    for field in _fields_at(struct, version):
        if field.is_struct_array():
            names.append((field.name, field_names(field.array_of, version)))
        elif field.is_struct():
            names.append((field.name, field_names(field, version)))
        else:
            names.append(field.name)
    return names


def our_field_names(node: samples.Node) -> list[Any]:
    assert isinstance(node, samples.Record)
    names: list[Any] = []
    for name, sub in node.fields:
        if name == "tagged_fields":
            continue
        element = sub.element if isinstance(sub, samples.Seq) else sub
        name = _THEIR_NAMES.get(name, name)
        names.append((name, our_field_names(element)) if isinstance(element, samples.Record) else name)
    return names


def encode(kind: str, key: int, version: int, obj: Any) -> bytes:
    return (encode_request if kind == "request" else encode_response)(key, version, obj)


def decode(kind: str, key: int, version: int, data: bytes) -> Any:
    return (decode_request if kind == "request" else decode_response)(key, version, data)


# --- ApiMessage (Kafka JSON) oracle ---------------------------------------------


@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_field_names_match(entry: tuple[int, int, str, Any]) -> None:
    key, version, kind, schema = entry
    cls = _their_class(key, version, kind)
    assert our_field_names(samples.shape(schema)) == field_names(cls._struct, version)


@pytest.mark.parametrize("variant", samples.VARIANTS)
@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_theirs_to_ours(entry: tuple[int, int, str, Any], variant: samples.Variant) -> None:
    """Encode with kafka-python, decode with ours, re-encode with ours: same bytes."""
    key, version, kind, schema = entry
    cls = _their_class(key, version, kind)
    obj = oracle_sample(key, schema, variant)
    theirs = cls(version=version, **to_theirs(cls._struct, version, their_names(obj))).encode(version=version)
    decoded = decode(kind, key, version, theirs)
    assert without_tags(decoded) == without_tags(obj)
    assert encode(kind, key, version, decoded) == theirs
    assert encode(kind, key, version, obj) == theirs


@pytest.mark.parametrize("variant", samples.VARIANTS)
@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_ours_to_theirs(entry: tuple[int, int, str, Any], variant: samples.Variant) -> None:
    """Encode with ours, decode with kafka-python: same values; their re-encode: same bytes."""
    key, version, kind, schema = entry
    cls = _their_class(key, version, kind)
    obj = oracle_sample(key, schema, variant)
    ours = encode(kind, key, version, obj)
    theirs = cls.decode(ours, version=version)
    assert from_theirs(cls._struct, version, theirs) == their_names(without_tags(obj))
    theirs._header = None  # decode() leaves this slot unset and encode() reads it
    assert theirs.encode(version=version) == ours


# --- legacy Struct oracle (kafka.protocol.old) -------------------------------------


@pytest.mark.parametrize("variant", samples.VARIANTS)
@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_legacy_classes_reencode_our_bytes(
    entry: tuple[int, int, str, Any], variant: samples.Variant
) -> None:
    key, version, kind, schema = entry
    cls = LEGACY.get((key, version, kind))
    if cls is None:
        pytest.skip(f"kafka.protocol.old has no {API_NAMES[key]} {kind} v{version} class")
    if (key, version, kind) in LEGACY_WRONG:
        pytest.skip(LEGACY_WRONG[(key, version, kind)])
    ours = encode(kind, key, version, oracle_sample(key, schema, variant))
    assert cls.decode(ours).encode() == ours


def test_oracle_covers_every_schema_but_the_new_group_protocol() -> None:
    """Every schema has an ApiMessage class, except KIP-848's (kafka-python 3.0 has none).

    Those are checked against vectors built from Kafka's JSON (test_kafka_vectors.py).
    """
    missing = {
        API_NAMES[e[0]]
        for e in SCHEMAS
        if (e[0], e[2]) not in CLASSES or e[1] > CLASSES[(e[0], e[2])].max_version
    }
    assert missing == {"ConsumerGroupHeartbeat", "ConsumerGroupDescribe"}
