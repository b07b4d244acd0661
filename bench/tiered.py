"""`tiered` suite: tiered storage's uploads and remote reads, against baselines from the same run.

One broker with tiered storage on a SeaweedFS started here (both on this
machine's cores); one partition of ``MB`` megabytes of 1 KB records written
by kcat (acks=1, full speed), 8 MiB segments.

- the object store's own ceiling: sequential 8 MiB uploads (put of a file) and
  downloads (ranged get) through the same S3 client the broker uses;
- produce: kcat's rate into the tiered topic; upload: bytes copied per second
  from the first record produced until the last closed segment is in the store
  (goal: uploads keep up with produce); and the upload rate against the store's
  own put ceiling;
- consume, same records, same run: kcat reads the whole partition from local
  disk (``local.retention.bytes`` unset), then ``local.retention.bytes`` is set
  to two segments, the local copies of the uploaded segments are deleted, and
  kcat reads the same records again, now from the object store (goal: >= 0.5 of
  the local rate).

Run alone: ``python -m bench.tiered [--mb N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

from bench import loadgen  # noqa: E402
from broker.tiered.rsm_config import make_object_store, parse_rsm_config  # noqa: E402
from tests.broker_process import BrokerProcess  # noqa: E402
from tests.cluster_process import QUIET  # noqa: E402
from tests.support.seaweed import SeaweedFS  # noqa: E402
from tests.tiered.helpers import list_offset  # noqa: E402

Row = tuple[str, float, str]
TOPIC = "tiered"
RECORD = 1000
SEGMENT = 8 << 20
MB = 512


def _offset(port: int, timestamp: int) -> int:
    return list_offset(port, TOPIC, timestamp)


def _store_ceiling(s3: SeaweedFS, directory: Path, count: int = 12) -> tuple[float, float]:
    """(put MB/s, get MB/s) of sequential 8 MiB objects."""
    path = directory / "segment.bin"
    path.write_bytes(os.urandom(SEGMENT))
    store = make_object_store(parse_rsm_config(s3.rsm_properties()))

    async def measure() -> tuple[float, float]:
        await store.put_file("ceiling/warm", path)
        start = time.perf_counter()
        for i in range(count):
            await store.put_file(f"ceiling/{i}", path)
        put = count * SEGMENT / (time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(count):
            await store.get_range(f"ceiling/{i}", 0, SEGMENT)
        get = count * SEGMENT / (time.perf_counter() - start)
        for i in range(count):
            await store.delete(f"ceiling/{i}")
        await store.delete("ceiling/warm")
        return put / 2**20, get / 2**20

    try:
        return asyncio.run(measure())
    finally:
        store.close()


def _wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def measure(mb: int) -> list[Row]:
    n = mb * 2**20 // RECORD
    with tempfile.TemporaryDirectory() as tmp, SeaweedFS() as s3:
        root = Path(tmp)
        put_ceiling, get_ceiling = _store_ceiling(s3, root)
        props = {
            "remote.log.storage.system.enable": "true",
            "remote.log.manager.task.interval.ms": "200",
            "log.retention.check.interval.ms": "200",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
            "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
            **s3.rsm_properties(),
        }
        config = root / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        broker = BrokerProcess(root / "data", extra=["--config", str(config)]).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap, "logger": QUIET})
            configs = {"remote.storage.enable": "true", "segment.bytes": str(SEGMENT), "retention.ms": "-1"}
            admin.create_topics([NewTopic(TOPIC, 1, 1, config=configs)])[TOPIC].result(30)
            records = loadgen.record_file(root, n, RECORD)
            start = time.perf_counter()
            produce = loadgen.kcat_produce(broker.bootstrap, TOPIC, [records], n, "1") * RECORD / 2**20
            produced = time.perf_counter()
            logs = sorted((broker.data_dir / f"{TOPIC}-0").glob("*.log"))
            active = int(logs[-1].stem)  # the active segment is never copied
            copied = sum(f.stat().st_size for f in logs[:-1]) / 2**20

            _wait(lambda: _offset(broker.port, -5) >= active - 1, 600, "the uploads")
            copied_at = time.perf_counter()
            upload = copied / (copied_at - start)
            lag_s = copied_at - produced

            local = loadgen.kcat_consume(broker.bootstrap, TOPIC, n, broker.proc.pid if broker.proc else None)
            resource = ConfigResource(
                ConfigResource.Type.TOPIC,
                TOPIC,
                incremental_configs=[
                    ConfigEntry(
                        "local.retention.bytes", str(2 * SEGMENT), incremental_operation=AlterConfigOpType.SET
                    )
                ],
            )
            admin.incremental_alter_configs([resource])[resource].result(30)
            kept = sorted((broker.data_dir / f"{TOPIC}-0").glob("*.log"))[-3]
            _wait(lambda: _offset(broker.port, -4) >= int(kept.stem), 120, "local deletion")
            remote = loadgen.kcat_consume(
                broker.bootstrap, TOPIC, n, broker.proc.pid if broker.proc else None
            )
        except BaseException:
            print(broker.log()[-3000:], file=sys.stderr)
            raise
        finally:
            broker.stop()
    local_mb = local.rate * RECORD / 2**20
    remote_mb = remote.rate * RECORD / 2**20
    return [
        ("object store: sequential 8 MiB puts", put_ceiling, "MB/s"),
        ("object store: sequential 8 MiB gets", get_ceiling, "MB/s"),
        ("produce into the tiered topic (kcat, acks=1)", produce, "MB/s"),
        ("uploads, first record to last segment copied", upload, "MB/s"),
        ("uploads finished after produce ended", lag_s, "s"),
        ("ratio: upload / produce (goal >= 1: uploads keep up)", upload / produce, "x"),
        ("ratio: upload / store put ceiling", upload / put_ceiling, "x"),
        ("consume from local disk (kcat)", local_mb, "MB/s"),
        ("consume the same records from the object store (kcat)", remote_mb, "MB/s"),
        ("ratio: remote / local consume (goal >= 0.5)", remote_mb / local_mb, "x"),
        ("ceiling of that ratio here: store gets / local consume", get_ceiling / local_mb, "x"),
        ("broker CPU s per GB read, local", local.broker_cpu / (mb / 1024), "s"),
        ("broker CPU s per GB read, remote", remote.broker_cpu / (mb / 1024), "s"),
    ]


def run(mb: int = MB) -> None:
    rows = measure(mb)
    width = max(len(r[0]) for r in rows)
    for name, value, unit in rows:
        print(f"{name:<{width}}  {value:10.2f} {unit}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m bench.tiered")
    ap.add_argument("--mb", type=int, default=MB)
    run(ap.parse_args().mb)
