"""`minikafka dump-log` on real segment files written by the broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from protocol.records import Record, build_batch
from tests.broker_process import REPO, BrokerProcess
from tests.integration.test_wire import create, produce
from tests.wire import RawClient


def dump(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", "dump-log", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_dump_log_index_timeindex_and_verify(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "dl")
        for i in range(20):
            recs = [Record(j, j, b"k%d" % j, b"v" * 400, [("h", b"x")]) for j in range(4)]
            produce(
                c,
                "dl",
                build_batch(recs, base_timestamp=1_700_000_000_000 + i * 10, codec=1 if i == 3 else 0),
            )
    assert broker.stop() == 0
    seg = broker.data_dir / "dl-0" / "00000000000000000000"
    res = dump(f"{seg}.log", "--print-data")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert len(batches) == 20
    assert batches[3].startswith("baseOffset: 12 lastOffset: 15 count: 4")
    assert "compresscodec: gzip" in batches[3] and "isvalid: true" in batches[3]
    assert "CreateTime: 1700000000003" in batches[0] and "partitionLeaderEpoch: 0" in batches[0]
    records = [line for line in lines if line.startswith("| offset:")]
    assert (
        len(records) == 80
        and "key: k1 payload: " + "v" * 400 in records[1]
        and "headerKeys: [h]" in records[1]
    )

    idx = dump(f"{seg}.index")
    entries = [line for line in idx.stdout.splitlines() if line.startswith("offset:")]
    assert entries and all(" position: " in e for e in entries)
    tidx = dump(f"{seg}.timeindex")
    assert any(line.startswith("timestamp: 17000000000") for line in tidx.stdout.splitlines())
    ok = dump(f"{seg}.index", "--verify-index-only")
    assert ok.returncode == 0 and "mismatch" not in ok.stdout

    # a corrupted tail and a wrong index entry are reported, with a failing exit code
    with open(f"{seg}.log", "ab") as f:
        f.write(b"\x00\x01junk")
    bad = dump(f"{seg}.log")
    assert bad.returncode == 1 and "invalid bytes at the end" in bad.stdout
    data = bytearray(Path(f"{seg}.index").read_bytes())
    data[4:8] = (7).to_bytes(4, "big")
    Path(f"{seg}.index").write_bytes(bytes(data))
    wrong = dump(f"{seg}.index", "--verify-index-only")
    assert wrong.returncode == 1 and "Index mismatch" in wrong.stdout
    broker.start()


def test_dump_log_bad_arguments(tmp_path: Path) -> None:
    res = dump(str(tmp_path / "00000000000000000000.log"))
    assert res.returncode == 1 and "cannot read" in res.stderr
    other = tmp_path / "notes.txt"
    other.write_text("x")
    res = dump(str(other))
    assert res.returncode == 1 and "not a segment file name" in res.stderr
