"""Our schemas against protocol-layouts.md, the project's written authority for layouts.

The document lists every field of every supported version as indented blocks::

    ProduceRequest v3
      TransactionalId: NULLABLE_STRING
      TopicData: ARRAY of TopicProduceData
        Name: STRING

This test parses those blocks, converts names to snake_case (TransactionalId ->
transactional_id, timeoutMs -> timeout_ms) and types to shapes (see
protocol.messages.samples), and requires each to equal the shape of our Struct
for the same api, version and direction (tagged fields aside). The document
covers the versions of Kafka 2.x; the flexible versions are checked against
vectors built from Kafka's JSON definitions (test_kafka_vectors.py).

The document is kept in tests/data/protocol-layouts.md (its first lines say where
its facts come from).
"""

from __future__ import annotations

import re

import pytest

from protocol.messages import MODULES, samples
from protocol.messages.samples import Node, Record, Scalar, Seq
from tests.data import LAYOUTS_DOC

_HEADING = re.compile(r"^## (\d+) (\w+)")
_TITLE = re.compile(r"^(\w+?)(Request|Response) v(\d+)")
_SCALARS: dict[str, Scalar] = {
    "INT8": Scalar("int", 8),
    "INT16": Scalar("int", 16),
    "INT32": Scalar("int", 32),
    "INT64": Scalar("int", 64),
    "int32": Scalar("int", 32),
    "BOOL": Scalar("bool"),
    "STRING": Scalar("string"),
    "string": Scalar("string"),
    "COMPACT_STRING": Scalar("string", compact=True),
    "NULLABLE_STRING": Scalar("string", nullable=True),
    "BYTES": Scalar("bytes"),
    "NULLABLE_RECORDS(int32 len)": Scalar("bytes", nullable=True),
}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _parse_fields(lines: list[tuple[int, str]], start: int, indent: int) -> tuple[Record, int]:
    """Fields at exactly `indent` from lines[start:], returning the Record and the next index."""
    fields: list[tuple[str, Node]] = []
    i = start
    while i < len(lines) and lines[i][0] >= indent:
        depth, text = lines[i]
        assert depth == indent, f"unexpected indent: {text!r}"
        i += 1
        if text.startswith("[tagged"):
            continue  # tagged fields travel inside the TAG_BUFFER
        if text == "(TAG_BUFFER)":
            continue  # every struct of a flexible version ends with one

        name, _, kind = text.partition(": ")
        array = re.fullmatch(r"(COMPACT_)?ARRAY(\(nullable\))? of (\w+)", kind)
        if array is None:
            fields.append((snake(name), _SCALARS[kind]))
            continue
        compact, nullable, element = bool(array.group(1)), bool(array.group(2)), array.group(3)
        if element in _SCALARS:
            fields.append((snake(name), Seq(_SCALARS[element], nullable, compact)))
        else:
            record, i = _parse_fields(lines, i, indent + 2)
            fields.append((snake(name), Seq(record, nullable, compact)))
    return Record(tuple(fields)), i


def parse_layouts(text: str) -> dict[tuple[int, int, str], Record]:
    """{(api_key, version, "request"/"response"): Record} for every block in the document."""
    layouts: dict[tuple[int, int, str], Record] = {}
    api_key = None
    for part in re.split(r"^```.*$", text, flags=re.M):
        heading = [m for m in map(_HEADING.match, part.splitlines()) if m]
        if heading:
            api_key = int(heading[-1].group(1))
            continue
        rows = [line for line in part.splitlines() if line.strip()]
        if not rows or not (title := _TITLE.match(rows[0])):
            continue
        assert api_key is not None
        lines = [(len(r) - len(r.lstrip(" ")), r.strip()) for r in rows[1:]]
        record, end = _parse_fields(lines, 0, 2)
        assert end == len(lines)
        layouts[(api_key, int(title.group(3)), title.group(2).lower())] = record
    return layouts


_DOCUMENTED = parse_layouts(LAYOUTS_DOC.read_text(encoding="utf-8"))


def test_document_covers_the_versions_it_was_written_for() -> None:
    assert len(_DOCUMENTED) > 100  # every version minikafka served before flexible versions


@pytest.mark.parametrize("entry", sorted(_DOCUMENTED), ids=lambda e: f"{MODULES[e[0]].NAME}-v{e[1]}-{e[2]}")
def test_schema_matches_document(entry: tuple[int, int, str]) -> None:
    key, version, kind = entry
    schema = (MODULES[key].REQUEST if kind == "request" else MODULES[key].RESPONSE)[version]
    assert samples.shape(schema, tagged=False) == _DOCUMENTED[entry]
