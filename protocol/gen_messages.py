"""Generate `protocol/messages/<api>.py` and `protocol/api_keys.py` from Kafka's message JSON.

Kafka declares every request and response in JSON files (apache/kafka,
``clients/src/main/resources/common/message/``). This generator reads those
facts (names, types, version ranges, tags, defaults) and writes one module per
API in the notation of `protocol.schema`, so the schemas are a product of the
spec rather than hand-typed layouts. It is a development tool: nothing at run
or test time reads Kafka's files.

Usage::

    python -m protocol.gen_messages --source DIR   # DIR holds Kafka's *Request.json/*Response.json

Kafka's JSON allows ``//`` comments; they are stripped. A top version marked
``latestVersionUnstable`` is left out. Field names become snake_case
("ThrottleTimeMs" -> "throttle_time_ms").
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from protocol.schema import PRIMITIVES, parse_versions

# The APIs minikafka has schemas for: Kafka's request names without "Request".
APIS = (
    "Produce",
    "Fetch",
    "ListOffsets",
    "Metadata",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "JoinGroup",
    "Heartbeat",
    "LeaveGroup",
    "SyncGroup",
    "DescribeGroups",
    "ListGroups",
    "SaslHandshake",
    "ApiVersions",
    "CreateTopics",
    "DeleteTopics",
    "DeleteRecords",
    "InitProducerId",
    "OffsetForLeaderEpoch",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn",
    "WriteTxnMarkers",
    "TxnOffsetCommit",
    "DescribeConfigs",
    "AlterConfigs",
    "DescribeLogDirs",
    "SaslAuthenticate",
    "CreatePartitions",
    "DeleteGroups",
    "ElectLeaders",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "IncrementalAlterConfigs",
    "OffsetDelete",
    "DescribeCluster",
    "DescribeProducers",
    "DescribeTransactions",
    "ListTransactions",
    "ConsumerGroupHeartbeat",
    "ConsumerGroupDescribe",
    "DescribeAcls",
    "CreateAcls",
    "DeleteAcls",
    "DescribeClientQuotas",
    "AlterClientQuotas",
    "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
)

_OUT = Path(__file__).resolve().parent


def strip_comments(text: str) -> str:
    """Kafka's JSON with ``//`` line comments removed (``//`` inside strings kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def snake(name: str) -> str:
    """CamelCase -> snake_case, e.g. "ThrottleTimeMs" -> "throttle_time_ms", "TopicID" -> "topic_id"."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def load(source: Path, name: str) -> dict[str, Any]:
    return json.loads(strip_comments((source / f"{name}.json").read_text()))


def _default_literal(kind: str, raw: Any) -> str | None:
    """The Python literal for Kafka's "default" of a field of type `kind`, or None for the type's zero."""
    if raw is None:
        return None
    text = str(raw)
    if text == "null":
        return "None"
    if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return str(int(text, 0))
    if kind == "float64":
        return repr(float(text))
    if kind == "bool":
        return "True" if text == "true" else "False"
    if kind == "string":
        return repr(text)
    return None


class _Emitter:
    def __init__(self, common: dict[str, list[dict[str, Any]]]) -> None:
        self.common = common

    def kind(self, spec: dict[str, Any], depth: int) -> str:
        t = spec["type"]
        if t.startswith("[]"):
            element = t[2:]
            if element in PRIMITIVES:
                return f'Arr("{element}")'
            return f"Arr({self.fields(spec.get('fields') or self.common[element], depth + 1)})"
        if t in PRIMITIVES:
            return f'"{t}"'
        return f"Obj({self.fields(spec.get('fields') or self.common[t], depth + 1)})"

    def field(self, spec: dict[str, Any], depth: int) -> str:
        args = [repr(snake(spec["name"])), self.kind(spec, depth)]
        versions = spec.get("versions", "0+")
        if versions != "0+":
            args.append(repr(versions))
        if "nullableVersions" in spec:
            args.append(f"nullable={spec['nullableVersions']!r}")
        if "tag" in spec:
            args.append(f"tag={spec['tag']}")
            args.append(f"tagged={spec.get('taggedVersions', versions)!r}")
        literal = _default_literal(spec["type"], spec.get("default"))
        if literal is not None:
            args.append(f"default={literal}")
        if "flexibleVersions" in spec:
            args.append(f"flexible={spec['flexibleVersions']!r}")
        return f"F({', '.join(args)})"

    def fields(self, specs: list[dict[str, Any]], depth: int) -> str:
        pad = "    " * (depth + 1)
        inner = "".join(f"\n{pad}{self.field(s, depth)}," for s in specs)
        return inner + "\n" + "    " * depth


# Versions marked unstable in the stored definitions that Kafka 4.0 released as stable.
_STABLE_SINCE_SNAPSHOT = {"ConsumerGroupHeartbeatRequest"}


def _versions(spec: dict[str, Any]) -> tuple[int, int]:
    valid = parse_versions(spec["validVersions"])
    if valid is None:
        raise ValueError(f"{spec['name']} has no valid versions")
    lo, hi = valid
    if spec.get("latestVersionUnstable") and spec["name"] not in _STABLE_SINCE_SNAPSHOT:
        hi -= 1
    return lo, hi


def generate_module(source: Path, api: str) -> tuple[str, tuple[int, str, int, int, int | None]]:
    """(module text, (api_key, name, lo, hi, flexible_from)) for one API."""
    req = load(source, f"{api}Request")
    resp = load(source, f"{api}Response")
    key = req["apiKey"]
    lo, hi = _versions(req)
    flexible = req.get("flexibleVersions", "none")
    flex_range = parse_versions(flexible)
    flex_from = None if flex_range is None else flex_range[0]
    common = {s["name"]: s["fields"] for s in req.get("commonStructs", []) + resp.get("commonStructs", [])}
    em = _Emitter(common)
    req_fields = em.fields(req["fields"], 0)
    resp_fields = em.fields(resp["fields"], 0)
    flex_note = "not flexible" if flex_from is None else f"flexible from v{flex_from}"
    text = f'''"""{api} (API key {key}): versions {lo}-{hi}, {flex_note}.

Generated by `python -m protocol.gen_messages` from Kafka's {api}Request.json and
{api}Response.json; change the generator or regenerate, never edit by hand.
"""

from protocol.schema import Arr, F, Obj, message_versions  # noqa: F401

API_KEY = {key}
NAME = "{api}"
VERSIONS = ({lo}, {hi})
FLEXIBLE = {flexible!r}

REQUEST_FIELDS = [{req_fields}]

RESPONSE_FIELDS = [{resp_fields}]

REQUEST = message_versions(REQUEST_FIELDS, {lo}, {hi}, FLEXIBLE)
RESPONSE = message_versions(RESPONSE_FIELDS, {lo}, {hi}, FLEXIBLE)
'''
    return text, (key, api, lo, hi, flex_from)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m protocol.gen_messages", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--source", type=Path, required=True, help="directory of Kafka's message JSON files")
    args = parser.parse_args(argv)
    table: list[tuple[int, str, int, int, int | None]] = []
    written: list[Path] = []
    for api in APIS:
        text, row = generate_module(args.source, api)
        path = _OUT / "messages" / f"{snake(api)}.py"
        path.write_text(text)
        written.append(path)
        table.append(row)
    rows = "".join(
        f"\n    {k}: ({name!r}, {snake(name)!r}, {lo}, {hi}, {flex}),"
        for k, name, lo, hi, flex in sorted(table)
    )
    keys = _OUT / "api_keys.py"
    keys.write_text(
        '"""{api_key: (name, module in protocol.messages, lowest version, highest version,\n'
        "first flexible version or None)}.\n\n"
        "Generated by `python -m protocol.gen_messages` from Kafka's message JSON; never edit by hand.\n"
        "The request header is v2 (tagged fields after client_id) and the response header v1 (tagged\n"
        'fields after correlation_id) from the first flexible version on, except ApiVersions\' response header.\n"""\n\n'
        f"API_KEYS: dict[int, tuple[str, str, int, int, int | None]] = {{{rows}\n}}\n"
    )
    written.append(keys)
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", *map(str, written)], check=True)
    print(f"wrote {len(written)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
