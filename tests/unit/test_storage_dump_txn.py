"""`minikafka dump-log` on transaction markers and `.txnindex` files (Kafka's kafka-dump-log output)."""

from __future__ import annotations

import io

from protocol.control_records import control_key
from protocol.records import Record, build_batch
from storage import naming
from storage.config import LogConfig
from storage.dump import main
from storage.partition_log import PartitionLog
from tests.unit.txn_support import TxnWriter


def _dump(*args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = main(list(args), out)
    return status, out.getvalue().splitlines()


def test_markers_and_txn_index_print_as_kafka_does(tmp_path) -> None:
    log = PartitionLog(str(tmp_path / "t-0"), LogConfig(), now_ms=0)
    w = TxnWriter(log)
    w.data(7, [b"a", b"b"])
    w.data(8, [b"c"])
    w.end(7, commit=False)
    w.end(8, commit=True)
    log.close()
    d = log.directory

    status, lines = _dump(naming.log_file(d, 0), "--print-data")
    assert status == 0
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert "isTransactional: true isControl: true" in batches[2]
    assert batches[2].startswith("baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1")
    assert "producerId: 7 producerEpoch: 0" in batches[2]
    records = [line for line in lines if line.startswith("| offset:")]
    assert records[0].endswith("key: a payload: v-0")
    assert records[3].startswith("| offset: 3 CreateTime: ")
    assert records[3].endswith(
        "keySize: 4 valueSize: 6 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 3"
    )
    assert records[4].endswith("endTxnMarker: COMMIT coordinatorEpoch: 3")
    assert "payload" not in records[3]

    status, lines = _dump(naming.txn_index_file(d, 0))
    assert status == 0
    assert lines == [
        f"Dumping {naming.txn_index_file(d, 0)}",
        "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 2",
    ]


def test_other_control_types_and_torn_txn_index(tmp_path) -> None:
    path = tmp_path / "00000000000000000000.log"
    batch = build_batch([Record(0, 0, control_key(2), b"")], base_timestamp=1, is_control=True)
    path.write_bytes(batch)
    status, lines = _dump(str(path), "--print-data")
    assert status == 0 and lines[-1].endswith("headerKeys: [] controlType: LEADER_CHANGE(2)")
    path.write_bytes(build_batch([Record(0, 0, control_key(99), b"")], base_timestamp=1, is_control=True))
    assert _dump(str(path), "--print-data")[1][-1].endswith("controlType: UNKNOWN(99)")
    path.write_bytes(build_batch([Record(0, 0, b"\x00", b"")], base_timestamp=1, is_control=True))
    assert "controlType: unreadable" in _dump(str(path), "--print-data")[1][-1]

    idx = tmp_path / "00000000000000000000.txnindex"
    idx.write_bytes(
        bytes.fromhex("0000" + "00" * 7 + "05" + "00" * 8 + "00" * 7 + "09" + "00" * 7 + "0a") + b"\x00"
    )
    status, lines = _dump(str(idx))
    assert status == 1
    assert lines[1:] == [
        "version: 0 producerId: 5 firstOffset: 0 lastOffset: 9 lastStableOffset: 10",
        "Found 1 bytes of a partial entry at the end of 00000000000000000000.txnindex",
    ]
