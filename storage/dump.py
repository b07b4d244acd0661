"""`minikafka dump-log FILE...`: print segment files the way Kafka's kafka-dump-log does.

- `.log`: one line per batch (base/last offset, count, sequences, producer,
  leader epoch, flags, position, timestamp, size, magic, codec, CRC and whether
  it checks out); with `--print-data` one `| offset: ...` line per record with
  key and payload. For a control batch's record the line ends as Kafka's does:
  `endTxnMarker: COMMIT coordinatorEpoch: N` (or `ABORT`) for a transaction
  marker, `controlType: NAME(id)` for any other control type, and no key or
  payload. A torn or corrupt tail is reported, not raised.
- `.index`: `offset: N position: P` per entry (absolute offsets).
- `.timeindex`: `timestamp: T offset: N` per entry.
- `.txnindex`: `version: 0 producerId: P firstOffset: F lastOffset: L
  lastStableOffset: S` per aborted transaction, as Kafka prints it; a torn
  trailing partial entry is reported.
- `--verify-index-only`: check every index entry against the `.log` beside it
  (entry offset must fall in the batch starting at its position) and print
  mismatches only.
Exit code 0, or 1 when a file is missing, unreadable or fails verification.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from collections.abc import Iterator
from typing import TextIO

from protocol.codecs import CODEC_NAMES
from protocol.control_records import (
    ABORT,
    COMMIT,
    CONTROL_TYPE_NAMES,
    parse_control_key,
    parse_end_txn_value,
)
from protocol.errors import ProtocolError
from protocol.records import BatchHeader, Record, crc32c, decode_batch, scan_valid_prefix
from storage import naming
from storage.txn_index import ENTRY_SIZE, iter_entries

_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_CRC_START = 21


def _flag(v: bool) -> str:
    return "true" if v else "false"


def _batch_line(h: BatchHeader, crc_ok: bool) -> str:
    ts_name = "LogAppendTime" if h.timestamp_type else "CreateTime"
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_flag(h.is_transactional)} isControl: {_flag(h.is_control)} "
        f"position: {h.position} {ts_name}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
        f"compresscodec: {CODEC_NAMES.get(h.codec, h.codec)} crc: {h.crc} isvalid: {_flag(crc_ok)}"
    )


def _text(b: bytes | None) -> str:
    return "null" if b is None else b.decode("utf-8", "backslashreplace")


def _control_text(r: Record) -> str:
    """What Kafka's dump prints for a control record instead of key and payload."""
    try:
        control_type = parse_control_key(r.key)
    except ProtocolError as exc:
        return f"controlType: unreadable ({exc})"
    if control_type in (ABORT, COMMIT):
        try:
            epoch = parse_end_txn_value(r.value)
        except ProtocolError as exc:
            return f"endTxnMarker: {CONTROL_TYPE_NAMES[control_type]} unreadable ({exc})"
        return f"endTxnMarker: {CONTROL_TYPE_NAMES[control_type]} coordinatorEpoch: {epoch}"
    return f"controlType: {CONTROL_TYPE_NAMES.get(control_type, 'UNKNOWN')}({control_type})"


def dump_log(path: str, data: bytes, print_data: bool, out: TextIO) -> bool:
    base = naming.parse_segment_filename(os.path.basename(path))
    out.write(f"Log starting offset: {base[0] if base else '?'}\n")
    headers, valid = scan_valid_prefix(data)
    for h in headers:
        out.write(_batch_line(h, crc32c(data[h.position + _CRC_START : h.position + h.size]) == h.crc) + "\n")
        if print_data:
            try:
                _, records = decode_batch(data, h.position)
            except ProtocolError as exc:
                out.write(f"| cannot decode records: {exc}\n")
                continue
            for r in records:
                hkeys = ", ".join(k for k, _ in r.headers)
                content = (
                    _control_text(r) if h.is_control else f"key: {_text(r.key)} payload: {_text(r.value)}"
                )
                out.write(
                    f"| offset: {h.offset_of(r)} {'LogAppendTime' if h.timestamp_type else 'CreateTime'}: "
                    f"{h.timestamp_of(r)} keySize: {-1 if r.key is None else len(r.key)} "
                    f"valueSize: {-1 if r.value is None else len(r.value)} headerKeys: [{hkeys}] "
                    f"{content}\n"
                )
    if valid != len(data):
        out.write(
            f"Found {len(data) - valid} invalid bytes at the end of {os.path.basename(path)} (position {valid})\n"
        )
        return False
    return True


def _entries(data: bytes, entry: struct.Struct) -> Iterator[tuple[int, int]]:
    for pos in range(0, len(data) - len(data) % entry.size, entry.size):
        yield entry.unpack_from(data, pos)


def dump_index(path: str, data: bytes, base: int, out: TextIO) -> None:
    for rel, position in _entries(data, _INDEX_ENTRY):
        if rel == 0 and position == 0 and base != 0:
            break  # preallocated zero tail of an active index
        out.write(f"offset: {base + rel} position: {position}\n")


def dump_time_index(path: str, data: bytes, base: int, out: TextIO) -> None:
    for ts, rel in _entries(data, _TIME_ENTRY):
        if ts == 0 and rel == 0:
            break
        out.write(f"timestamp: {ts} offset: {base + rel}\n")


def dump_txn_index(path: str, data: bytes, out: TextIO) -> bool:
    """Print each aborted transaction; False if the file ends in a partial entry."""
    for version, t in iter_entries(data):
        out.write(
            f"version: {version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}\n"
        )
    rest = len(data) % ENTRY_SIZE
    if rest:
        out.write(f"Found {rest} bytes of a partial entry at the end of {os.path.basename(path)}\n")
        return False
    return True


def verify_index(path: str, data: bytes, base: int, log: bytes, out: TextIO) -> bool:
    headers, _ = scan_valid_prefix(log)
    by_position = {h.position: h for h in headers}
    ok = True
    last = -1
    for rel, position in _entries(data, _INDEX_ENTRY):
        if rel == 0 and position == 0 and last >= 0:
            break
        offset = base + rel
        h = by_position.get(position)
        if h is None or not h.base_offset <= offset <= h.last_offset:
            out.write(
                f"Index mismatch: offset {offset} position {position} is not in the batch starting there\n"
            )
            ok = False
        if offset <= last:
            out.write(f"Index entries not increasing: offset {offset} after {last}\n")
            ok = False
        last = offset
    return ok


def main(argv: list[str], out: TextIO = sys.stdout) -> int:
    ap = argparse.ArgumentParser(prog="minikafka dump-log", description="Print Kafka segment files.")
    ap.add_argument("files", nargs="+", help=".log, .index, .timeindex or .txnindex files")
    ap.add_argument("--print-data", action="store_true", help="print every record of every batch")
    ap.add_argument("--verify-index-only", action="store_true", help="check .index files against their .log")
    args = ap.parse_args(argv)
    status = 0
    for path in args.files:
        out.write(f"Dumping {path}\n")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            print(f"minikafka dump-log: cannot read {path}: {exc.strerror}", file=sys.stderr)
            status = 1
            continue
        parsed = naming.parse_segment_filename(os.path.basename(path))
        if parsed is None:
            print(
                f"minikafka dump-log: {path}: not a segment file name "
                "(<20 digits>.log/.index/.timeindex/.txnindex)",
                file=sys.stderr,
            )
            status = 1
            continue
        base, suffix = parsed
        if suffix == naming.LOG_SUFFIX:
            if not dump_log(path, data, args.print_data, out):
                status = 1
        elif suffix == naming.INDEX_SUFFIX:
            if args.verify_index_only:
                log_path = path[: -len(suffix)] + naming.LOG_SUFFIX
                try:
                    with open(log_path, "rb") as f:
                        log = f.read()
                except OSError as exc:
                    print(f"minikafka dump-log: cannot read {log_path}: {exc.strerror}", file=sys.stderr)
                    status = 1
                    continue
                if not verify_index(path, data, base, log, out):
                    status = 1
            else:
                dump_index(path, data, base, out)
        elif suffix == naming.TIME_INDEX_SUFFIX:
            if not args.verify_index_only:
                dump_time_index(path, data, base, out)
        elif suffix == naming.TXN_INDEX_SUFFIX:
            if not args.verify_index_only and not dump_txn_index(path, data, out):
                status = 1
        else:
            print(f"minikafka dump-log: {path}: unsupported file type {suffix}", file=sys.stderr)
            status = 1
    return status
