"""Durability through the broker: injected write/fsync failures, idempotent retries after a crash,
and kill -9 of a broker subprocess under an idempotent acks=all producer (TESTING.md "Reliability")."""

from __future__ import annotations

import asyncio
import os
import queue
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.server import BrokerServer
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch, decode_batch, validate_batches
from storage import naming
from storage.fs import FaultyFileSystem
from tests.broker_process import BrokerProcess
from tests.integration.test_wire import create, fetch, produce
from tests.wire import RawClient


class InProcessBroker:
    """A `BrokerServer` on its own event loop in a thread, with an injectable filesystem."""

    def __init__(self, data_dir: Path, fs: Any = None, **overrides: Any) -> None:
        self.config = BrokerConfig.load(
            overrides={"log.dirs": str(data_dir), "host": "127.0.0.1", "port": 0, **overrides}
        )
        self.fs = fs
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.error: BaseException | None = None

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            server = BrokerServer(self.config, self.fs)
            await server.start()
            self.server = server
            self.port = server.port
            self._ready.set()
            await self._stop.wait()
            await server.stop()

        try:
            asyncio.run(main())
        except BaseException as exc:  # surfaced by start/stop
            self.error = exc
            self._ready.set()

    def __enter__(self) -> InProcessBroker:
        self._thread.start()
        assert self._ready.wait(20), "broker did not start"
        if self.error is not None:
            raise self.error
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)
        if self.error is not None:
            raise self.error


def _batch(*values: bytes, **kw: Any) -> bytes:
    return build_batch([Record(i, 0, b"k", v) for i, v in enumerate(values)], **kw)


def _values(c: RawClient, topic: str, offset: int = 0) -> list[tuple[int, bytes | None]]:
    out = []
    while True:
        part = fetch(c, topic, offset)
        assert part.error_code == 0
        if not part.records:
            return out
        for h in validate_batches(part.records):
            hh, recs = decode_batch(part.records, h.position)
            out.extend((hh.offset_of(r), r.value) for r in recs)
            offset = h.last_offset + 1


def test_failed_write_leaves_no_bytes_and_answers_storage_error(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    with InProcessBroker(tmp_path / "data", fs) as b, RawClient(b.port) as c:
        assert create(c, "w").error_code == 0
        assert produce(c, "w", _batch(b"a", b"b")).base_offset == 0
        path = naming.log_file(str(tmp_path / "data" / "w-0"), 0)
        size = os.path.getsize(path)
        fs.fail_next_write("w-0/")
        bad = produce(c, "w", _batch(b"x" * 5000, b"y" * 5000))
        assert bad.error_code == ErrorCode.KAFKA_STORAGE_ERROR and bad.base_offset == -1
        assert fs.writes_failed == 1 and os.path.getsize(path) == size  # the half-written bytes are gone
        assert produce(c, "w", _batch(b"c"), acks=-1).base_offset == 2  # the log is still usable
        assert _values(c, "w") == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_failed_fsync_never_acknowledges_acks_all(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    data = tmp_path / "data"
    with InProcessBroker(data, fs) as b, RawClient(b.port) as c:
        assert create(c, "f").error_code == 0 and create(c, "other").error_code == 0
        assert produce(c, "f", _batch(b"durable"), acks=-1).error_code == 0
        fs.fail_next_fsync("f-0/" + naming.offset_filename(0) + naming.LOG_SUFFIX)
        bad = produce(c, "f", _batch(b"maybe"), acks=-1)
        assert bad.error_code == ErrorCode.KAFKA_STORAGE_ERROR and bad.base_offset == -1
        assert fs.fsyncs_failed == 1
        # The partition is offline now (the page cache may have dropped the bytes); others carry on.
        assert produce(c, "f", _batch(b"later"), acks=1).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert fetch(c, "f", 0).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert produce(c, "other", _batch(b"fine"), acks=-1).error_code == 0
    with InProcessBroker(data) as b, RawClient(b.port) as c:  # after a restart it recovers
        values = [v for _, v in _values(c, "f")]
        assert values[0] == b"durable" and values[1:] in ([], [b"maybe"])


def test_flush_messages_makes_acks_1_wait_for_fsync(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    with InProcessBroker(tmp_path / "data", fs) as b, RawClient(b.port) as c:
        assert create(c, "fm", configs={"flush.messages": "1"}).error_code == 0
        assert create(c, "lazy").error_code == 0
        fs.fail_next_fsync("fm-0/" + naming.offset_filename(0) + naming.LOG_SUFFIX)
        assert produce(c, "fm", _batch(b"a"), acks=1).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        fs.fail_next_fsync("lazy-0/" + naming.offset_filename(0) + naming.LOG_SUFFIX)
        assert produce(c, "lazy", _batch(b"a"), acks=1).error_code == 0  # page cache only (the default)


def _init_pid(c: RawClient) -> int:
    return c.request(22, 0, {"transactional_id": None, "transaction_timeout_ms": 60000}).producer_id


def _idem(pid: int, seq: int, *values: bytes) -> bytes:
    return _batch(*values, producer_id=pid, producer_epoch=0, base_sequence=seq)


@pytest.mark.parametrize("kind", ["kill", "clean"])
def test_idempotent_retry_after_restart_is_a_duplicate(tmp_path: Path, kind: str) -> None:
    """Producer state survives a SIGKILL (snapshot at roll + replay) and a clean restart (snapshot)."""
    props = tmp_path / "server.properties"
    props.write_text("log.segment.bytes=2000\n")
    proc = BrokerProcess(tmp_path / "data", extra=["--config", str(props)]).start()
    try:
        with RawClient(proc.port) as c:
            assert create(c, "idem").error_code == 0
            pid = _init_pid(c)
            seq, sent = 0, []
            for i in range(40):  # several rolls, so snapshots exist below the log end
                resp = produce(c, "idem", _idem(pid, seq, b"v%d-" % i * 20, b"w%d" % i), acks=-1)
                assert resp.error_code == 0
                sent.append((seq, resp.base_offset, i))
                seq += 2
        snapshots = [n for n in os.listdir(tmp_path / "data" / "idem-0") if n.endswith(".snapshot")]
        assert snapshots
        if kind == "kill":
            proc.kill()
        else:
            assert proc.stop() == 0
        proc.start()
        with RawClient(proc.port) as c:
            for seq_, base, i in sent[-5:]:  # the last five batches are recognised
                resp = produce(c, "idem", _idem(pid, seq_, b"v%d-" % i * 20, b"w%d" % i), acks=-1)
                assert (resp.error_code, resp.base_offset) == (0, base)
            resp = produce(c, "idem", _idem(pid, seq, b"next"), acks=-1)
            assert (resp.error_code, resp.base_offset) == (0, 80)
            bad = produce(c, "idem", _idem(pid, seq + 5, b"gap"), acks=-1)
            assert bad.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert len(_values(c, "idem")) == 81
    finally:
        proc.stop()


def test_single_broker_reads_everything_after_a_kill_with_a_stale_high_watermark_checkpoint(
    tmp_path: Path,
) -> None:
    """A lone leader's HW comes back from replication-offset-checkpoint, then rises to its LEO at once.

    The checkpoint is written every 5 s, so after a kill it lags the log; the
    test writes the lagging file itself rather than racing the timer. Records
    above it must be readable again before anything else is produced.
    """
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(proc.port) as c:
            assert create(c, "hw").error_code == 0
            for i in range(20):
                assert produce(c, "hw", _batch(b"v%d" % i), acks=-1).error_code == 0
        proc.kill()
        (tmp_path / "data" / naming.REPLICATION_OFFSET_CHECKPOINT).write_text("0\n1\nhw 0 5\n")
        proc.start()
        with RawClient(proc.port) as c:
            assert [v for _, v in _values(c, "hw")] == [b"v%d" % i for i in range(20)]
    finally:
        proc.stop()


# -- kill -9 under a real idempotent producer ---------------------------------------------------------


def _kill_run(tmp_path: Path, total: int, kills: int, seed: int) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    rng = random.Random(seed)
    props = tmp_path / "server.properties"
    props.write_text(
        "log.segment.bytes=262144\n"
        "log.flush.offset.checkpoint.interval.ms=500\n"
        "log.flush.start.offset.checkpoint.interval.ms=500\n"
        "num.partitions=1\n"
    )
    proc = BrokerProcess(tmp_path / "data", extra=["--config", str(props)]).start()
    topic = "durable"
    acked: dict[int, int] = {}
    errors: list[str] = []
    lock = threading.Lock()

    def delivered(err: Any, msg: Any) -> None:
        with lock:
            if err is not None:
                errors.append(str(err))
            else:
                acked[int(msg.value()[:8])] = msg.offset()

    producer = Producer(
        {
            "bootstrap.servers": proc.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120000,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 250,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 250,
            "topic.metadata.refresh.interval.ms": 1000,
            "log_level": 0,  # the kills make librdkafka complain on stderr; that is the point
        }
    )
    # Kill points: produced-record counts; each kill lands a random moment after its point while
    # production goes on, and the next point waits for the previous restart.
    points = sorted(rng.sample(range(total // 20, total * 19 // 20), kills))
    requests: queue.Queue[int | None] = queue.Queue()
    restarted = threading.Semaphore(0)
    killed: list[int] = []

    def killer() -> None:
        while (point := requests.get()) is not None:
            time.sleep(rng.random() * 0.05)
            proc.kill()
            killed.append(point)
            time.sleep(rng.random() * 0.3)
            proc.start()
            restarted.release()

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        pending = 0
        for i in range(total):
            if points and i == points[0]:
                if pending:
                    restarted.acquire()
                requests.put(points.pop(0))
                pending = 1
            value = b"%08d:" % i + b"x" * rng.randint(0, 40)
            while True:
                try:
                    producer.produce(
                        topic, value=value, key=b"%d" % (i % 100), partition=0, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        requests.put(None)
        thread.join(120)
        assert producer.flush(120) == 0
        assert len(killed) == kills, killed
        assert errors == []
        assert len(acked) == total

        consumer = Consumer(
            {
                "bootstrap.servers": proc.bootstrap,
                "group.id": "durability-check",
                "enable.auto.commit": False,
                "fetch.max.bytes": 8 << 20,
            }
        )
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        seen: list[tuple[int, int]] = []
        deadline = time.monotonic() + 60
        while len(seen) < total and time.monotonic() < deadline:
            for msg in consumer.consume(10000, 1.0):
                assert msg.error() is None, msg.error()
                seen.append((msg.offset(), int(msg.value()[:8])))
        consumer.close()
    finally:
        requests.put(None)
        thread.join(120)
        proc.stop()
    offsets = [o for o, _ in seen]
    values = [v for _, v in seen]
    assert offsets == sorted(set(offsets)), "offsets must strictly increase"
    assert len(values) == len(set(values)) == total, "no duplicates, nothing missing"
    assert values == sorted(values), "the idempotent producer's order is kept"
    at = dict(seen)
    assert all(at[offset] == seq for seq, offset in acked.items()), "every acknowledged record at its offset"


@pytest.mark.timeout(240)
def test_kill_9_durability_100k(tmp_path: Path) -> None:
    """100,000 records, 5 SIGKILLs at random moments (about 10 s here; DURABILITY_SEED picks the moments)."""
    _kill_run(tmp_path, total=100_000, kills=5, seed=int(os.environ.get("DURABILITY_SEED", "100")))


def _checkpointed(data: Path, topic: str) -> int | None:
    path = data / naming.RECOVERY_POINT_CHECKPOINT
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        t, p, offset = line.split()
        if (t, p) == (topic, "0"):
            return int(offset)
    return None


def test_background_flushes_move_the_checkpointed_recovery_point(tmp_path: Path) -> None:
    """Rolled segments and flush.ms are flushed in the background (page cache otherwise), and the
    periodic checkpoint records it: an unclean restart then rescans only the tail."""
    data = tmp_path / "data"
    with (
        InProcessBroker(data, **{"log.flush.offset.checkpoint.interval.ms": 100}) as b,
        RawClient(b.port) as c,
    ):
        assert create(c, "rolls", configs={"segment.bytes": "1000"}).error_code == 0
        assert create(c, "timed", configs={"flush.ms": "50"}).error_code == 0
        assert create(c, "lazy").error_code == 0
        for _ in range(10):
            assert produce(c, "rolls", _batch(b"r" * 300), acks=1).error_code == 0
            assert produce(c, "lazy", _batch(b"l" * 300), acks=1).error_code == 0
        assert produce(c, "timed", _batch(b"t"), acks=1).error_code == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rolled = _checkpointed(data, "rolls")
            if rolled is not None and rolled >= 9 and _checkpointed(data, "timed") == 1:
                break
            time.sleep(0.05)
        assert _checkpointed(data, "rolls") in (9, 10)  # at least up to the last roll
        assert _checkpointed(data, "timed") == 1
        assert _checkpointed(data, "lazy") == 0  # no roll, no flush.ms: nothing forced to disk
