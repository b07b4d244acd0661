"""LogManager: topics registry, data-dir lock, meta.properties, checkpoints, clean shutdown."""

from __future__ import annotations

import json
import os
import re

import pytest

from protocol.errors import ErrorCode, KafkaError
from storage import naming, topic_ids
from storage.config import LogConfig
from storage.errors import DataDirError, LogDirLockedError
from storage.log_manager import LogManager, parse_properties
from tests.unit.test_storage_support import append, make_batch

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def _manager(tmp_path, **kw) -> LogManager:
    return LogManager(str(tmp_path / "data"), SMALL, **kw)


def test_create_topic_makes_partition_dirs_and_registry(tmp_path) -> None:
    with _manager(tmp_path) as mgr:
        mgr.create_topic("orders", 3, {"segment.bytes": "5000", "min.insync.replicas": "1"})
        data = tmp_path / "data"
        for p in range(3):
            assert (data / f"orders-{p}" / (naming.offset_filename(0) + ".log")).exists()
            log = mgr.get_log("orders", p)
            assert log is not None and log.config.segment_bytes == 5000
            assert log.config.index_interval_bytes == 200  # from the manager's defaults
        assert mgr.get_log("orders", 3) is None and mgr.get_log("nope", 0) is None
        info = mgr.topics()["orders"]
        assert (info.partitions, info.configs) == (3, {"segment.bytes": "5000", "min.insync.replicas": "1"})
        doc = json.loads((data / naming.TOPICS_FILE).read_text())
        text_id = topic_ids.to_text(info.topic_id)
        assert doc == {
            "version": 1,
            "topics": {
                "orders": {
                    "partitions": 3,
                    "topic_id": text_id,
                    "configs": {"min.insync.replicas": "1", "segment.bytes": "5000"},
                }
            },
        }
        for p in range(3):
            assert (
                data / f"orders-{p}" / "partition.metadata"
            ).read_text() == f"version: 0\ntopic_id: {text_id}"


@pytest.mark.parametrize(
    ("name", "partitions", "configs", "code"),
    [
        ("", 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),
        (".", 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("..", 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("x" * 250, 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("bad/name", 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("with space", 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("a_b", 1, None, ErrorCode.INVALID_TOPIC_EXCEPTION),  # collides with "a.b"
        ("a.b", 1, None, ErrorCode.TOPIC_ALREADY_EXISTS),
        ("fine", 0, None, ErrorCode.INVALID_PARTITIONS),
        ("fine", -3, None, ErrorCode.INVALID_PARTITIONS),
        ("fine", 1, {"segment.bytes": "tiny"}, ErrorCode.INVALID_CONFIG),
        ("fine", 1, {"no.such.thing": "1"}, ErrorCode.INVALID_CONFIG),
    ],
)
def test_create_topic_errors(tmp_path, name: str, partitions: int, configs, code: ErrorCode) -> None:
    with _manager(tmp_path) as mgr:
        mgr.create_topic("a.b", 1)
        with pytest.raises(KafkaError) as info:
            mgr.create_topic(name, partitions, configs)
        assert info.value.code == code
        assert set(mgr.topics()) == {"a.b"}


def test_validate_only_creates_nothing(tmp_path) -> None:
    with _manager(tmp_path) as mgr:
        mgr.create_topic("t", 2, {"retention.ms": "1000"}, validate_only=True)
        assert mgr.topics() == {} and not (tmp_path / "data" / "t-0").exists()


def test_delete_topic(tmp_path) -> None:
    with _manager(tmp_path) as mgr:
        mgr.create_topic("keep", 1)
        mgr.create_topic("gone", 2)
        log = mgr.get_log("gone", 1)
        assert log is not None
        append(log, make_batch(5), now_ms=0)
        mgr.delete_topic("gone")
        assert set(mgr.topics()) == {"keep"} and mgr.get_log("gone", 1) is None
        assert sorted(n for n in os.listdir(tmp_path / "data") if n.startswith(("keep", "gone"))) == [
            "keep-0"
        ]
        with pytest.raises(KafkaError) as info:
            mgr.delete_topic("gone")
        assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        mgr.create_topic("gone", 1)  # the name can be reused, starting empty
        assert mgr.get_log("gone", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_persistence_across_clean_restart(tmp_path) -> None:
    mgr = _manager(tmp_path, node_id=3)
    cluster = mgr.cluster_id
    mgr.create_topic("t", 2, {"message.timestamp.type": "LogAppendTime"})
    log = mgr.get_log("t", 1)
    assert log is not None
    for _ in range(20):
        append(log, make_batch(4, value_size=100), now_ms=0)
    data = log.read(0, 10**9).data
    mgr.close()
    d = tmp_path / "data"
    assert (d / naming.CLEAN_SHUTDOWN_FILE).exists()
    assert (d / naming.RECOVERY_POINT_CHECKPOINT).read_text() == "0\n2\nt 0 0\nt 1 80\n"
    assert (d / naming.LOG_START_OFFSET_CHECKPOINT).read_text() == "0\n2\nt 0 0\nt 1 0\n"

    again = _manager(tmp_path, node_id=3)
    assert again.clean_shutdown and again.cluster_id == cluster
    assert not (d / naming.CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is detected
    assert again.topics()["t"].config.log_append_time
    log = again.get_log("t", 1)
    assert log is not None and log.log_end_offset == 80
    assert log.read(0, 10**9).data == data
    assert append(log, make_batch(1), now_ms=0).base_offset == 80
    again.close()


def test_crash_restart_recovers(tmp_path) -> None:
    mgr = _manager(tmp_path)
    mgr.create_topic("t", 1)
    log = mgr.get_log("t", 0)
    assert log is not None
    for _ in range(30):
        append(log, make_batch(2, value_size=100), now_ms=0)
    mgr.flush_all()
    assert (tmp_path / "data" / naming.RECOVERY_POINT_CHECKPOINT).read_text() == "0\n1\nt 0 60\n"
    append(log, make_batch(2), now_ms=0)
    path = naming.log_file(log.directory, log.active_segment.base_offset)
    mgr.abandon()
    with open(path, "ab") as f:
        f.write(b"\x00" * 100)
    again = _manager(tmp_path)
    assert not again.clean_shutdown
    log = again.get_log("t", 0)
    assert log is not None and log.log_end_offset == 62
    again.close()


def test_second_manager_on_same_dir_fails(tmp_path) -> None:
    mgr = _manager(tmp_path)
    with pytest.raises(LogDirLockedError, match="in use"):
        _manager(tmp_path)
    mgr.close()
    _manager(tmp_path).close()


def test_meta_properties(tmp_path) -> None:
    _manager(tmp_path, node_id=5, cluster_id="abcDEF123").close()
    text = (tmp_path / "data" / naming.META_PROPERTIES).read_text()
    assert text.startswith("#")
    assert parse_properties(text) == {"cluster.id": "abcDEF123", "node.id": "5", "version": "1"}
    with pytest.raises(DataDirError, match="node.id"):
        _manager(tmp_path, node_id=6)
    with pytest.raises(DataDirError, match="cluster.id"):
        _manager(tmp_path, node_id=5, cluster_id="other")
    mgr = _manager(tmp_path, node_id=5)
    assert mgr.cluster_id == "abcDEF123"
    mgr.close()


def test_generated_cluster_id_is_22_url_safe_chars(tmp_path) -> None:
    with _manager(tmp_path) as mgr:
        assert len(mgr.cluster_id) == 22
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", mgr.cluster_id)


def test_leftovers_of_interrupted_delete_are_removed(tmp_path) -> None:
    with _manager(tmp_path) as mgr:
        mgr.create_topic("t", 1)
    d = tmp_path / "data"
    (d / "t-0.abc123-delete").mkdir()
    (d / "orphan-0").mkdir()
    (d / "orphan-0" / (naming.offset_filename(0) + ".log")).write_bytes(b"")
    with _manager(tmp_path) as mgr:
        assert set(mgr.topics()) == {"t"}
    assert not (d / "t-0.abc123-delete").exists() and not (d / "orphan-0").exists()


def test_registry_rebuilt_from_dirs_when_missing(tmp_path) -> None:
    with _manager(tmp_path) as mgr:
        mgr.create_topic("my-topic", 2)
        log = mgr.get_log("my-topic", 1)
        assert log is not None
        append(log, make_batch(3), now_ms=0)
        topic_id = mgr.topics()["my-topic"].topic_id
    (tmp_path / "data" / naming.TOPICS_FILE).unlink()
    with _manager(tmp_path) as mgr:
        assert mgr.topics()["my-topic"].partitions == 2
        assert mgr.topics()["my-topic"].topic_id == topic_id  # from partition.metadata
        log = mgr.get_log("my-topic", 1)
        assert log is not None and log.log_end_offset == 3


def test_flush_all_and_closed_manager(tmp_path) -> None:
    mgr = _manager(tmp_path)
    mgr.create_topic("t", 1)
    log = mgr.get_log("t", 0)
    assert log is not None
    append(log, make_batch(2), now_ms=0)
    mgr.flush_all()
    assert log.recovery_point == 2
    mgr.close()
    mgr.close()
    with pytest.raises(KafkaError):
        mgr.create_topic("u", 1)


def test_high_watermarks_are_checkpointed_and_restored(tmp_path) -> None:
    """replication-offset-checkpoint: written at close, read back at open, clamped to [log start, LEO]."""
    mgr = _manager(tmp_path)
    mgr.create_topic("t", 3)
    logs = [mgr.get_log("t", p) for p in range(3)]
    assert all(lg is not None for lg in logs)
    for lg in logs:
        assert lg is not None
        for _ in range(5):
            append(lg, make_batch(2), now_ms=0, hw=False)
    assert logs[0] is not None and logs[1] is not None
    logs[0].advance_high_watermark(4)
    logs[1].advance_high_watermark(10)
    mgr.close()
    d = tmp_path / "data"
    assert (d / naming.REPLICATION_OFFSET_CHECKPOINT).read_text() == "0\n3\nt 0 4\nt 1 10\nt 2 0\n"

    again = _manager(tmp_path)
    assert [again.get_log("t", p).high_watermark for p in range(3)] == [4, 10, 0]  # type: ignore[union-attr]
    again.close()

    # A checkpoint beyond the log end is clamped; a partition missing from it opens at its log start.
    (d / naming.REPLICATION_OFFSET_CHECKPOINT).write_text("0\n1\nt 0 99\n")
    third = _manager(tmp_path)
    assert [third.get_log("t", p).high_watermark for p in range(3)] == [10, 0, 0]  # type: ignore[union-attr]
    third.close()


def test_no_high_watermark_checkpoint_keeps_the_log_end(tmp_path) -> None:
    """A data directory written before HWs were checkpointed opens with HW = LEO, as it always did."""
    mgr = _manager(tmp_path)
    mgr.create_topic("t", 1)
    lg = mgr.get_log("t", 0)
    assert lg is not None
    append(lg, make_batch(3), now_ms=0, hw=False)
    mgr.close()
    os.remove(tmp_path / "data" / naming.REPLICATION_OFFSET_CHECKPOINT)
    again = _manager(tmp_path)
    assert again.get_log("t", 0).high_watermark == 3  # type: ignore[union-attr]
    again.close()
