"""ApiVersions (key 18), versions 0-3. v3 is flexible (compact strings, tag buffers)."""

from __future__ import annotations

from construct import Struct

from protocol.primitives import (
    Array,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    TaggedFields,
)

API_KEY = 18
NAME = "ApiVersions"

_API = Struct("api_key" / Int16, "min_version" / Int16, "max_version" / Int16)
_API_FLEX = Struct(
    "api_key" / Int16, "min_version" / Int16, "max_version" / Int16, "tagged_fields" / TaggedFields
)

REQUEST = {
    0: Struct(),
    1: Struct(),
    2: Struct(),
    3: Struct(
        "client_software_name" / CompactString,
        "client_software_version" / CompactString,
        "tagged_fields" / TaggedFields,
    ),
}

RESPONSE = {
    0: Struct("error_code" / Int16, "api_keys" / Array(_API)),
    1: Struct("error_code" / Int16, "api_keys" / Array(_API), "throttle_time_ms" / Int32),
    2: Struct("error_code" / Int16, "api_keys" / Array(_API), "throttle_time_ms" / Int32),
    3: Struct(
        "error_code" / Int16,
        "api_keys" / CompactArray(_API_FLEX),
        "throttle_time_ms" / Int32,
        "tagged_fields" / TaggedFields,
    ),
}
