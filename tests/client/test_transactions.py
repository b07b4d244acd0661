"""The bundled producer's transactions against a broker subprocess, cross-checked with librdkafka.

Commits and aborts across several partitions read back by the bundled consumer
and by confluent-kafka's, each with both isolation levels (read_committed sees
exactly the committed records and walks past the markers and the aborted
records); offsets sent with send_offsets_to_transaction reach the group only
at commit; an older producer with the same transactional.id is fenced for
good; a failed record makes the transaction abortable, and the producer goes
on after the abort; methods called in the wrong state raise at once.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from client import (
    AdminClient,
    AIOProducer,
    ConfigError,
    Consumer,
    ConsumerGroupMetadata,
    IllegalStateError,
    KafkaResponseError,
    KafkaTimeoutError,
    NewTopic,
    Producer,
    ProducerFencedError,
    TopicPartition,
    TransactionAbortableError,
    TransactionAbortedError,
)
from client.errors import CommitFailedError
from protocol.errors import ErrorCode
from tests.broker_process import REPO, BrokerProcess, free_port

pytestmark = pytest.mark.timeout(180)

TOPICS = ("txn-x", "txn-y")  # only test_commit_and_abort_across_partitions writes these; the others txn-misc
PARTITIONS = 3
TPS = [TopicPartition(t, p) for t in TOPICS for p in range(PARTITIONS)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("txn") / "data",
        env={
            "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            "MINIKAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000",
        },
    ).start()
    try:
        with AdminClient(bootstrap_servers=proc.bootstrap) as admin:
            new = [NewTopic(t, PARTITIONS, 1) for t in (*TOPICS, "txn-misc")]
            new.append(NewTopic("txn-small", 1, 1, {"max.message.bytes": "2000"}))
            new += [NewTopic(t, 2, 1) for t in ("txn-in", "txn-fence", "txn-spark")]
            assert all(e is None for e in admin.create_topics(new).values())
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


def _producer(broker: BrokerProcess, txn_id: str, **kw: object) -> Producer:
    return Producer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id, linger_ms=1, **kw)


def _send_all(producer: Producer, tag: str, n: int = 4) -> list[bytes]:
    values = []
    for tp in TPS:
        for i in range(n):
            value = f"{tag}-{tp}-{i}".encode()
            producer.send(tp.topic, value, partition=tp.partition)
            values.append(value)
    return values


def read_bundled(bootstrap: str, isolation: str) -> list[bytes]:
    """Every value up to the end offsets (the LSO under read_committed) with the bundled consumer."""
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", isolation_level=isolation) as c:
        c.assign(TPS)
        ends = c.end_offsets(TPS)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while any(c.position(tp) < ends[tp] for tp in TPS):
            assert time.monotonic() < deadline, {tp: (c.position(tp), ends[tp]) for tp in TPS}
            for r in c.poll(0.5):
                assert r.value is not None and r.key is None  # never a control record
                got.append(r.value)  # type: ignore[arg-type]
        got.extend(r.value for r in c.poll(0.2))  # type: ignore[misc]
    return got


def read_confluent(bootstrap: str, isolation: str) -> list[bytes]:
    """Every value up to the end of each partition, read by librdkafka with ``isolation.level``."""
    ck = pytest.importorskip("confluent_kafka")
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ck-{isolation}-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([ck.TopicPartition(tp.topic, tp.partition, ck.OFFSET_BEGINNING) for tp in TPS])
    got: list[bytes] = []
    at_end: set[tuple[str, int]] = set()
    deadline = time.monotonic() + 30
    try:
        while len(at_end) < len(TPS):
            assert time.monotonic() < deadline, at_end
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
                at_end.add((msg.topic(), msg.partition()))
                continue
            got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_commit_and_abort_across_partitions(broker: BrokerProcess) -> None:
    committed: list[bytes] = []
    aborted: list[bytes] = []
    with _producer(broker, "txn-basic") as p:
        assert p.transactional_id == "txn-basic"
        assert p.config["enable.idempotence"] is True and p.config["acks"] == -1
        p.init_transactions(30)
        p.begin_transaction()
        committed += _send_all(p, "c1")
        p.commit_transaction(30)
        p.begin_transaction()
        aborted += _send_all(p, "a1")
        p.flush()  # on the broker before the abort: read_uncommitted sees them
        p.abort_transaction(30)
        p.begin_transaction()
        aborted += _send_all(p, "a2")  # probably never sent: aborted while buffered
        p.abort_transaction(30)
        p.begin_transaction()
        committed += _send_all(p, "c2")
        p.commit_transaction(30)
        p.begin_transaction()
        p.commit_transaction(30)  # an empty transaction commits without the coordinator
    for read in (read_bundled, read_confluent):
        assert sorted(read(broker.bootstrap, "read_committed")) == sorted(committed), read
        everything = read(broker.bootstrap, "read_uncommitted")
        assert set(committed) <= set(everything) <= set(committed) | set(aborted), read
        assert set(everything) & set(aborted), read


def test_async_producer_and_delivery_of_aborted_records(broker: BrokerProcess) -> None:
    async def run() -> None:
        async with AIOProducer(
            bootstrap_servers=broker.bootstrap, transactional_id="txn-aio", linger_ms=50
        ) as p:
            await p.init_transactions()
            p.begin_transaction()
            sent = await p.send("txn-misc", b"kept", partition=0)
            await p.commit_transaction()
            md = await sent
            assert md.offset >= 0
            p.begin_transaction()
            doomed = await p.send("txn-misc", b"dropped", partition=1)
            await p.abort_transaction()
            with pytest.raises(TransactionAbortedError):
                await doomed

    asyncio.run(run())


def _committed(admin: AdminClient, group: str, want: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """The group's committed offsets once they equal ``want`` (markers are written after EndTxn answers)."""
    deadline = time.monotonic() + 10
    while True:
        got = {tp: om.offset for tp, om in admin.list_consumer_group_offsets(group).items()}
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_offsets_become_visible_only_at_commit(broker: BrokerProcess) -> None:
    group = "txn-cp-group"
    with _producer(broker, "txn-seed") as seed:
        seed.init_transactions()
        seed.begin_transaction()
        for i in range(6):
            seed.send("txn-in", f"in-{i}".encode(), partition=i % 2)
        seed.commit_transaction()
    consumer = Consumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    admin = AdminClient(bootstrap_servers=broker.bootstrap)
    p = _producer(broker, "txn-cp")
    try:
        consumer.subscribe(["txn-in"])
        records = []
        deadline = time.monotonic() + 30
        while len(records) < 6:
            assert time.monotonic() < deadline
            records += consumer.poll(0.5)
        meta = consumer.group_metadata()
        assert meta.group_id == group and meta.generation_id >= 0 and meta.member_id
        positions = {tp: consumer.position(tp) for tp in consumer.assignment()}
        assert set(positions) == {TopicPartition("txn-in", 0), TopicPartition("txn-in", 1)}
        assert all(pos >= 3 for pos in positions.values())  # past 3 records (and maybe the marker)
        p.init_transactions()

        # Aborted: the offsets never reach the group.
        p.begin_transaction()
        p.send("txn-misc", b"out-aborted", partition=2)
        p.send_offsets_to_transaction({tp: 1 for tp in positions}, meta)
        p.abort_transaction()
        assert admin.list_consumer_group_offsets(group) == {}

        # Committed: visible only after the commit.
        p.begin_transaction()
        for r in records:
            p.send("txn-misc", b"out-" + r.value, partition=2)  # type: ignore[operator]
        p.send_offsets_to_transaction(positions, meta)
        assert admin.list_consumer_group_offsets(group) == {}
        p.commit_transaction()
        assert _committed(admin, group, positions) == positions

        # A stale member identity is rejected by the group coordinator: the transaction must be aborted.
        p.begin_transaction()
        p.send("txn-misc", b"out-stale", partition=2)
        stale = ConsumerGroupMetadata(group, meta.generation_id + 5, "not-a-member")
        with pytest.raises(TransactionAbortableError) as info:
            p.send_offsets_to_transaction({TopicPartition("txn-in", 0): 6}, stale)
        assert isinstance(info.value.__cause__, CommitFailedError)
        with pytest.raises(TransactionAbortableError):
            p.commit_transaction()
        p.abort_transaction()
        time.sleep(0.5)  # the abort's markers are written: the stale offsets never show up
        assert _committed(admin, group, positions) == positions

        # A group id alone (generation -1) commits as a producer outside the group.
        p.begin_transaction()
        p.send_offsets_to_transaction({("txn-in", 0): 4}, "txn-cp-other")
        p.commit_transaction()
        want = {TopicPartition("txn-in", 0): 4}
        assert _committed(admin, "txn-cp-other", want) == want
    finally:
        p.close()
        consumer.close(autocommit=False)
        admin.close()


def test_an_older_producer_is_fenced_for_good(broker: BrokerProcess) -> None:
    old = _producer(broker, "txn-fence")
    new = _producer(broker, "txn-fence")
    newest = _producer(broker, "txn-fence")
    try:
        old.init_transactions()
        old.begin_transaction()
        old.send("txn-fence", b"zombie-1", partition=0).get(30)
        new.init_transactions()  # aborts old's open transaction, then bumps the epoch
        # The old producer learns it from Produce ...
        with pytest.raises(ProducerFencedError) as info:
            old.send("txn-fence", b"zombie-2", partition=0).get(30)
        fenced = info.value
        assert fenced.code in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH)
        # ... and every later call raises the same error.
        for call in (
            old.commit_transaction,
            old.abort_transaction,
            old.begin_transaction,
            lambda: old.send("txn-fence", b"zombie-3", partition=0),
            lambda: old.send_offsets_to_transaction({("txn-in", 0): 1}, "g"),
        ):
            with pytest.raises(ProducerFencedError) as again:
                call()
            assert again.value is fenced

        # Fenced at EndTxn: its records were all written before the newer producer came.
        new.begin_transaction()
        new.send("txn-fence", b"zombie-4", partition=1).get(30)
        newest.init_transactions()
        with pytest.raises(ProducerFencedError):
            new.commit_transaction()
        newest.begin_transaction()
        newest.send("txn-fence", b"survivor", partition=1)
        newest.commit_transaction()
    finally:
        for p in (old, new, newest):
            p.close()
    with Consumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as c:
        tps = [TopicPartition("txn-fence", 0), TopicPartition("txn-fence", 1)]
        c.assign(tps)
        ends = c.end_offsets(tps)
        values = []
        while any(c.position(tp) < ends[tp] for tp in tps):
            values += [r.value for r in c.poll(0.5)]
    assert not any(v.startswith(b"zombie") for v in values)  # type: ignore[union-attr]
    assert b"survivor" in values


def test_a_failed_record_makes_the_transaction_abortable(broker: BrokerProcess) -> None:
    with _producer(broker, "txn-abortable") as p:
        p.init_transactions()
        p.begin_transaction()
        ok = p.send("txn-small", b"fits", partition=0)
        ok.get(30)
        too_big = p.send("txn-small", b"x" * 5000, partition=0)  # over the topic's max.message.bytes
        with pytest.raises(KafkaResponseError) as info:
            too_big.get(30)
        assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
        with pytest.raises(TransactionAbortableError) as abortable:
            p.send("txn-small", b"more", partition=0)
        assert abortable.value.__cause__ is info.value
        with pytest.raises(TransactionAbortableError):
            p.commit_transaction()
        p.abort_transaction()
        # The lost sequence numbers were reset with an epoch bump: the next transaction just works.
        p.begin_transaction()
        p.send("txn-small", b"after", partition=0)
        p.commit_transaction()
    with Consumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as c:
        tp = TopicPartition("txn-small", 0)
        c.assign([tp])
        end = c.end_offsets([tp])[tp]
        values = []
        while c.position(tp) < end:
            values += [r.value for r in c.poll(0.5)]
    assert values == [b"after"]


def test_methods_in_the_wrong_state_raise_at_once(broker: BrokerProcess) -> None:
    with pytest.raises(ConfigError, match="acks=all"):
        Producer(bootstrap_servers=broker.bootstrap, transactional_id="t", acks=1)
    with pytest.raises(ConfigError, match="enable.idempotence"):
        Producer(bootstrap_servers=broker.bootstrap, transactional_id="t", enable_idempotence=False)
    with pytest.raises(ConfigError, match="empty"):
        Producer(bootstrap_servers=broker.bootstrap, transactional_id="")
    with Producer(bootstrap_servers=broker.bootstrap) as plain:
        with pytest.raises(IllegalStateError, match="transactional.id"):
            plain.begin_transaction()
        with pytest.raises(IllegalStateError, match="transactional.id"):
            plain.init_transactions()
    with _producer(broker, "txn-states") as p:
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.begin_transaction()
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.send("txn-misc", b"v", partition=0)
        p.init_transactions()
        with pytest.raises(IllegalStateError, match="already called"):
            p.init_transactions()
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            p.send("txn-misc", b"v", partition=0)
        for call in (p.commit_transaction, p.abort_transaction):
            with pytest.raises(IllegalStateError, match="no transaction is in progress"):
                call()
        with pytest.raises(IllegalStateError, match="no transaction is in progress"):
            p.send_offsets_to_transaction({("txn-in", 0): 1}, "g")
        p.begin_transaction()
        with pytest.raises(IllegalStateError, match="already in progress"):
            p.begin_transaction()
        p.send("txn-misc", b"in-txn", partition=0)
        p.commit_transaction()
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            p.send("txn-misc", b"v", partition=0)
    with (
        Consumer(bootstrap_servers=broker.bootstrap) as c,
        pytest.raises(IllegalStateError, match="group.id"),
    ):
        c.group_metadata()


def test_a_timed_out_call_goes_on_and_is_resumed_by_calling_it_again(broker: BrokerProcess) -> None:
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens: init_transactions cannot complete
    with Producer(
        bootstrap_servers=nowhere, transactional_id="txn-nowhere", reconnect_backoff_max_ms=100
    ) as p:
        with pytest.raises(KafkaTimeoutError, match="call it again"):
            p.init_transactions(0.3)
        with pytest.raises(IllegalStateError, match=r"init_transactions\(\) did not complete"):
            p.begin_transaction()
        with pytest.raises(KafkaTimeoutError):
            p.init_transactions(0.3)
    with _producer(broker, "txn-resume") as p:
        with pytest.raises(KafkaTimeoutError):
            p.init_transactions(0)  # no time at all: it goes on in the background
        p.init_transactions(30)  # waits for that same call
        p.begin_transaction()
        p.send("txn-misc", b"resumed", partition=0)
        p.commit_transaction(30)


# -- the `transactions` commands ------------------------------------------------------------------------


def mk(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``minikafka ARGS`` (the console script's module)."""
    res = subprocess.run(
        [sys.executable, "-m", "broker.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in res.stderr, res.stderr
    return res


def _error_line(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: error: "), lines
    return lines[0]


def test_cli_list_and_describe(broker: BrokerProcess) -> None:
    b = ("--bootstrap-server", broker.bootstrap)
    with _producer(broker, "cli-open") as open_txn, _producer(broker, "cli-ready") as ready:
        open_txn.init_transactions()
        ready.init_transactions()
        open_txn.begin_transaction()
        open_txn.send("txn-misc", b"cli", partition=1).get(30)

        res = mk("transactions", "list", *b)
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        assert lines[0].split() == ["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"]
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        assert rows["cli-open"][3] == "Ongoing" and rows["cli-ready"][3] == "Empty"
        assert rows["cli-open"][1] == "0"

        res = mk("transactions", "list", "--state", "ongoing", *b)
        listed = {line.split()[0] for line in res.stdout.splitlines()[1:]}
        assert "cli-open" in listed and "cli-ready" not in listed
        res = mk("transactions", "list", "--state", "Empty,CompleteCommit", "--json", *b)
        listed_json = {t["transactional_id"]: t for t in json.loads(res.stdout)}
        assert listed_json["cli-ready"]["state"] == "Empty" and "cli-open" not in listed_json
        assert "unknown transaction state 'Pending'" in _error_line(
            mk("transactions", "list", "--state", "Pending", *b)
        )

        res = mk("transactions", "describe", "cli-open", "cli-ready", *b)
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        assert lines[0].split() == [
            "TRANSACTIONAL-ID",
            "COORDINATOR",
            "PRODUCER-ID",
            "EPOCH",
            "STATE",
            "TIMEOUT-MS",
            "START-TIME",
            "DURATION-MS",
            "PARTITIONS",
        ]
        described = {line.split()[0]: line.split() for line in lines[1:]}
        assert described["cli-open"][4] == "Ongoing" and described["cli-open"][5] == "60000"
        assert described["cli-open"][8] == "txn-misc-1"
        assert described["cli-ready"][4:] == ["Empty", "60000", "-", "-", "-"]

        res = mk("transactions", "describe", "cli-open", "--json", *b)
        (d,) = json.loads(res.stdout)
        assert d["state"] == "Ongoing" and d["partitions"] == [["txn-misc", 1]]
        assert d["producer_id"] >= 0 and d["start_time_ms"] > 0 and d["duration_ms"] >= 0

        res = mk("transactions", "describe", "cli-ready", "no-such-id", *b)
        assert "transactional id 'no-such-id' does not exist" in _error_line(res)
        assert "cli-ready" in res.stdout  # the ids that exist are still shown
        open_txn.commit_transaction()

    res = mk("transactions", "describe", "cli-open", *b)
    row = res.stdout.splitlines()[1].split()
    # Kafka answers the last transaction's start time in any state; it has no duration any more
    assert row[4] == "CompleteCommit" and row[6] != "-" and row[7:] == ["-", "-"]

    with _producer(broker, "cli-consume") as p:
        p.init_transactions()
        for value, commit in ((b"kept", True), (b"dropped", False), (b"kept-too", True)):
            p.begin_transaction()
            p.send("txn-cli", value, partition=0)
            p.flush()
            p.commit_transaction() if commit else p.abort_transaction()
    consume = ("consume", "txn-cli", "--from-beginning", "--idle-timeout-ms", "1500", *b)
    assert mk(*consume, "--isolation-level", "read_committed").stdout.split() == ["kept", "kept-too"]
    assert mk(*consume).stdout.split() == ["kept", "dropped", "kept-too"]
    unreachable = ("--bootstrap-server", f"127.0.0.1:{free_port()}", "--timeout-ms", "2000")
    _error_line(mk("transactions", "list", *unreachable))
    assert mk("transactions", "describe", *b).returncode == 2  # an id is required


# -- the Spark source's kafka.isolation.level (its reader, without a JVM) -----------------------------


def test_spark_source_isolation_level(broker: BrokerProcess) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from client.spark.options import MiniKafkaOptionError, parse_read_options, parse_write_options
    from client.spark.reader import MiniKafkaBatchReader, read_range

    committed = [f"c{i}".encode() for i in range(6)]
    aborted = [f"a{i}".encode() for i in range(6)]
    pending = [f"o{i}".encode() for i in range(4)]
    with _producer(broker, "spark-writer") as p, _producer(broker, "spark-open") as left_open:
        p.init_transactions()
        for values, commit in ((committed, True), (aborted, False)):
            p.begin_transaction()
            for i, v in enumerate(values):
                p.send("txn-spark", v, partition=i % 2)
            p.flush()
            p.commit_transaction() if commit else p.abort_transaction()
        left_open.init_transactions()
        left_open.begin_transaction()
        for i, v in enumerate(pending):
            left_open.send("txn-spark", v, partition=i % 2)
        left_open.flush()

        base = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "txn-spark"}

        def rows(options: dict[str, str]) -> list[bytes]:
            ro = parse_read_options(options, streaming=False)
            out: list[bytes] = []
            for part in MiniKafkaBatchReader(ro).partitions():
                for batch in read_range(ro, part):  # type: ignore[arg-type]
                    out += batch.column("value").to_pylist()
            return sorted(out)

        assert parse_read_options(base, streaming=False).isolation_level == "read_uncommitted"
        # Spark's default, read_uncommitted: everything up to the high watermark.
        assert rows(base) == sorted(committed + aborted + pending)
        read_committed = {**base, "kafka.isolation.level": "READ_COMMITTED"}
        assert parse_read_options(read_committed, streaming=False).isolation_level == "read_committed"
        assert rows(read_committed) == sorted(committed)  # up to the LSO, aborted records left out
        left_open.abort_transaction()
    with pytest.raises(MiniKafkaOptionError, match="kafka.isolation.level"):
        parse_read_options({**base, "kafka.isolation.level": "serializable"}, streaming=False)
    with pytest.raises(MiniKafkaOptionError, match="kafka.transactional.id"):
        parse_write_options({"kafka.bootstrap.servers": broker.bootstrap, "kafka.transactional.id": "x"})
