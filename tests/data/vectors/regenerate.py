"""Regenerate (or check) the test vectors in this folder from sources independent of minikafka.

- ``murmur2.tsv``: kafka-python's ``murmur2`` (its own port of the Java client's
  ``Utils.murmur2``), ``toPositive`` = ``h & 0x7fffffff``, partition = ``toPositive % n``.
- ``group_partition.tsv``: Java's own ``String.hashCode`` (run through ``jshell``),
  partition = Kafka's ``Utils.abs(hashCode) % 50`` with ``abs(MIN_VALUE) = 0``.
- ``record_batch.hex``: kafka-python's ``DefaultRecordBatchBuilder`` (magic 2, CRC-32C).

Usage: ``python -m tests.data.vectors.regenerate [--check]``; ``--check`` exits 1
naming the file that differs instead of writing it. The tests compare these files
with minikafka's code, and ``tests/unit/test_vectors.py`` re-derives the
kafka-python ones on every run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent

MURMUR2_KEYS = [
    "",
    "a",
    "kafka",
    "key-0",
    "key-1",
    "key-5",
    "giberish123456789",
    "1234",
    "234",
    "34",
    "4",
    "hello world",
    "\u00e9t\u00e9",
    "\U0001f600",
]
GROUP_IDS = [
    "",
    "a",
    "Aa",
    "BB",
    "hello",
    "my-group",
    "kp-group",
    "ck-group",
    "console-consumer-12345",
    "polygenelubricants",
    "\u00e9t\u00e9",
    "\U0001f600",
    "test-group-" + "x" * 40,
]

MURMUR2_HEADER = (
    "# key_utf8\tmurmur2_signed_int32\thex\ttoPositive\tpartition_of_3\tpartition_of_50\n"
    "# the Java client's Utils.murmur2 on the UTF-8 bytes of key; regenerate: python -m tests.data.vectors.regenerate\n"
)
GROUP_HEADER = (
    "# group_id\tjava_String_hashCode\tcoordinator_partition_of_50 (Utils.abs(hashCode) % 50; abs(MIN_VALUE)=0)\n"
    "# hash codes from Java's String.hashCode (jshell); regenerate: python -m tests.data.vectors.regenerate\n"
)
BATCH_HEADER = (
    "# One RecordBatch v2 (80 bytes, hex, 32 bytes a line): baseOffset 0, baseTimestamp 1700000000000 (CreateTime),\n"
    '# no producer id (-1/-1/-1), one record: key b"key", value b"value", one header ("h", b"v").\n'
    "# CRC-32C over bytes [21, 80) = 0x83794a1d. Decoded identically by kafka-python, aiokafka, confluent-kafka and kcat when fetched.\n"
    "# written by kafka-python's DefaultRecordBatchBuilder; regenerate: python -m tests.data.vectors.regenerate\n"
)


def _kafka_python() -> tuple[object, object]:
    with warnings.catch_warnings():
        # kafka-python 3.0 calls the deprecated importlib.resources.read_text at import time.
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.partitioner.default import murmur2
        from kafka.record.default_records import DefaultRecordBatchBuilder
    return murmur2, DefaultRecordBatchBuilder


def murmur2_tsv() -> str:
    """murmur2.tsv as kafka-python computes it."""
    murmur2, _ = _kafka_python()
    rows = []
    for key in MURMUR2_KEYS:
        h = murmur2(key.encode("utf-8"))  # type: ignore[operator]
        signed = h - (1 << 32) if h >= 1 << 31 else h
        positive = h & 0x7FFFFFFF
        rows.append(f"{key}\t{signed}\t0x{h & 0xFFFFFFFF:08x}\t{positive}\t{positive % 3}\t{positive % 50}\n")
    return MURMUR2_HEADER + "".join(rows)


def record_batch_hex() -> str:
    """record_batch.hex as kafka-python's batch builder writes it."""
    _, builder_class = _kafka_python()
    builder = builder_class(  # type: ignore[operator]
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    builder.append(0, timestamp=1_700_000_000_000, key=b"key", value=b"value", headers=[("h", b"v")])
    data = bytes(builder.build()).hex()
    return BATCH_HEADER + "".join(data[i : i + 64] + "\n" for i in range(0, len(data), 64))


def group_partition_tsv() -> str:
    """group_partition.tsv from Java's String.hashCode, run in jshell (needs a JDK)."""
    jshell = shutil.which("jshell")
    if jshell is None:
        raise SystemExit("jshell not found: group_partition.tsv needs a JDK")
    lines = []
    for gid in GROUP_IDS:
        literal = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else _surrogates(c) for c in gid)
        lines.append(f'System.out.println(String.valueOf("{literal}".hashCode()));')
    out = subprocess.run(
        [jshell, "-q", "-R-Dfile.encoding=UTF-8", "-"],
        input="\n".join(lines) + "\n/exit\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    codes = [int(tok) for tok in out.split() if tok.lstrip("-").isdigit()]
    if len(codes) != len(GROUP_IDS):
        raise SystemExit(f"jshell printed {out!r}")
    rows = [
        f"{g}\t{c}\t{0 if c == -(2**31) else abs(c) % 50}\n" for g, c in zip(GROUP_IDS, codes, strict=True)
    ]
    return GROUP_HEADER + "".join(rows)


def _surrogates(c: str) -> str:
    v = ord(c) - 0x10000
    return f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"


GENERATORS = {
    "murmur2.tsv": murmur2_tsv,
    "record_batch.hex": record_batch_hex,
    "group_partition.tsv": group_partition_tsv,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--check", action="store_true", help="compare instead of writing")
    args = p.parse_args(argv)
    status = 0
    for name, make in GENERATORS.items():
        text = make()
        path = HERE / name
        if args.check:
            if path.read_text(encoding="utf-8") != text:
                print(f"{path} differs from what its source computes", file=sys.stderr)
                status = 1
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
