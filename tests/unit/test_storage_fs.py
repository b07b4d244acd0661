"""Filesystem seam, naming rules, checkpoints, leader epochs and LogConfig."""

from __future__ import annotations

import os

import pytest

from storage import naming
from storage.checkpoint import CorruptCheckpointError, format_checkpoint, read_offsets, write_offsets
from storage.config import LogConfig
from storage.fs import PAGE_SIZE, FaultyFileSystem, File, FileSystem, reserve_blocks
from storage.leader_epoch import LeaderEpochCache

# -- naming ----------------------------------------------------------------------------------


def test_segment_file_names_have_20_digits() -> None:
    assert naming.offset_filename(0) == "0" * 20
    assert naming.offset_filename(42) == "00000000000000000042"
    assert naming.offset_filename(2**63 - 1) == "09223372036854775807"
    assert naming.log_file("/d", 7) == "/d/00000000000000000007.log"
    assert naming.index_file("/d", 7).endswith("00000000000000000007.index")
    assert naming.time_index_file("/d", 7).endswith("00000000000000000007.timeindex")
    assert naming.snapshot_file("/d", 7).endswith("00000000000000000007.snapshot")
    with pytest.raises(ValueError):
        naming.offset_filename(-1)


@pytest.mark.parametrize("suffix", [".log", ".index", ".timeindex", ".snapshot"])
def test_parse_segment_filename_round_trip(suffix: str) -> None:
    assert naming.parse_segment_filename(naming.offset_filename(123) + suffix) == (123, suffix)


@pytest.mark.parametrize(
    "name",
    [
        "0.log",
        "00000000000000000000.log.deleted",
        "00000000000000000000.txt",
        "leader-epoch-checkpoint",
        "x" * 20 + ".log",
    ],
)
def test_parse_segment_filename_rejects_others(name: str) -> None:
    assert naming.parse_segment_filename(name) is None


def test_partition_dir_names_split_on_last_dash() -> None:
    assert naming.partition_dir_name("my-topic", 3) == "my-topic-3"
    assert naming.parse_partition_dir_name("my-topic-3") == ("my-topic", 3)
    assert naming.parse_partition_dir_name("a.b_c-0") == ("a.b_c", 0)
    for bad in ("topic", "topic-", "-3", "topic-x", "my-topic-3.abc-delete", "bad name-1"):
        assert naming.parse_partition_dir_name(bad) is None
    assert naming.is_delete_dir_name(naming.delete_dir_name("t-0", "abc"))


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/y", "ünï"])
def test_illegal_topic_names(name: str) -> None:
    assert naming.topic_name_error(name) is not None


@pytest.mark.parametrize("name", ["a", "a" * 249, "Topic.name_with-All.9", "...", "__consumer_offsets"])
def test_legal_topic_names(name: str) -> None:
    assert naming.topic_name_error(name) is None


# -- File and FaultyFileSystem ---------------------------------------------------------------


def test_file_append_pread_truncate(tmp_path) -> None:
    fs = FileSystem()
    f = fs.open(str(tmp_path / "f"))
    assert f.write(b"hello") == 0
    assert f.write(bytearray(b" world")) == 5
    assert f.write(memoryview(b"!")) == 11
    assert f.size() == 12
    assert f.pread(5, 6) == b"world"
    assert f.pread(100, 10) == b"d!"
    f.truncate(5)
    assert f.size() == 5 and os.path.getsize(tmp_path / "f") == 5
    f.fsync()
    f.close()
    assert f.closed
    reopened = fs.open(str(tmp_path / "f"), create=False)
    assert reopened.size() == 5
    reopened.close()


def test_failed_write_leaves_no_partial_bytes(tmp_path) -> None:
    fs = FaultyFileSystem()
    path = str(tmp_path / "f")
    f = fs.open(path)
    f.write(b"a" * 100)
    fs.fail_next_write()
    with pytest.raises(OSError):
        f.write(b"b" * 1000)
    assert fs.writes_failed == 1
    assert f.size() == 100
    assert os.path.getsize(path) == 100
    assert f.pread(1000, 0) == b"a" * 100
    assert f.write(b"c") == 100  # the next write works and lands right after the old data
    with open(path, "rb") as raw:
        assert raw.read() == b"a" * 100 + b"c"
    f.close()


def _allocated(path) -> int:
    return os.stat(path).st_blocks * 512


def _reserving_file(tmp_path, step: int, fs: FileSystem | None = None):  # type: ignore[no-untyped-def]
    """A new `File` reserving ``step`` bytes ahead, and its path; skips where fallocate is missing."""
    fd = os.open(tmp_path / "probe", os.O_CREAT | os.O_RDWR)
    try:
        if not reserve_blocks(fd, 0, 4096):
            pytest.skip("this filesystem has no fallocate(FALLOC_FL_KEEP_SIZE)")
    finally:
        os.close(fd)
        os.unlink(tmp_path / "probe")
    path = tmp_path / "seg.log"
    f = (fs or FileSystem()).open(str(path))
    f.reserve_ahead = step
    return f, path


def test_reserve_ahead_allocates_past_the_end_without_changing_size_or_content(tmp_path) -> None:
    f, path = _reserving_file(tmp_path, 1 << 20)
    chunks = [bytes([i]) * 300_000 for i in range(5)]  # 1.5 MB: the reservation steps to 2 MB
    for c in chunks:
        f.write(c)
    assert f.size() == os.path.getsize(path) == 1_500_000
    assert _allocated(path) >= 2 << 20
    assert f.pread(2_000_000, 0) == b"".join(chunks)
    f.release_reserve()
    assert os.path.getsize(path) == 1_500_000 and _allocated(path) < 1_500_000 + 65536
    assert f.pread(2_000_000, 0) == b"".join(chunks)
    f.write(b"x")  # reservation is still on: it reserves again
    assert _allocated(path) >= 2 << 20
    f.truncate(1000)  # truncation gives the reserved blocks back too
    assert _allocated(path) < 65536 and f.size() == 1000
    f.close()


def test_reservation_left_by_a_crash_is_seen_and_released(tmp_path) -> None:
    f, path = _reserving_file(tmp_path, 4 << 20)
    f.write(b"a" * 5000)
    f.close()  # closed with its reservation, as a killed process leaves it
    assert _allocated(path) >= 4 << 20
    again = FileSystem().open(str(path), create=False)
    assert again.size() == 5000
    again.release_reserve()
    assert _allocated(path) < 65536 and again.pread(10_000, 0) == b"a" * 5000
    again.close()


def test_failed_write_with_reservation_rolls_back(tmp_path) -> None:
    fs = FaultyFileSystem()
    f, path = _reserving_file(tmp_path, 1 << 20, fs)
    f.write(b"a" * 100)
    fs.fail_next_write()
    with pytest.raises(OSError):
        f.write(b"b" * 2_000_000)
    assert f.size() == os.path.getsize(path) == 100
    assert f.write(b"c") == 100 and f.pread(200, 0) == b"a" * 100 + b"c"
    assert _allocated(path) >= 1 << 20  # reserving again after the rollback gave the blocks back
    f.close()


def test_fault_filter_by_path(tmp_path) -> None:
    fs = FaultyFileSystem()
    a, b = fs.open(str(tmp_path / "a.log")), fs.open(str(tmp_path / "b.index"))
    fs.fail_next_write(".index")
    a.write(b"fine")
    with pytest.raises(OSError):
        b.write(b"boom")
    b.write(b"ok now")
    fs.fail_next_fsync("a.log")
    b.fsync()
    with pytest.raises(OSError):
        a.fsync()
    a.fsync()
    assert fs.fsyncs_failed == 1
    a.close()
    b.close()


def test_atomic_write_replaces_whole_file(tmp_path) -> None:
    fs = FaultyFileSystem()
    path = str(tmp_path / "ckpt")
    fs.atomic_write(path, b"one")
    fs.atomic_write(path, b"two!")
    assert fs.read_bytes(path) == b"two!"
    fs.fail_next_write()
    with pytest.raises(OSError):
        fs.atomic_write(path, b"three")
    fs.fail_next_fsync()
    with pytest.raises(OSError):
        fs.atomic_write(path, b"four")
    assert fs.read_bytes(path) == b"two!"
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


def test_fs_directory_helpers(tmp_path) -> None:
    fs = FileSystem()
    d = str(tmp_path / "x" / "y")
    fs.makedirs(d)
    fs.makedirs(d)
    assert fs.isdir(d) and fs.exists(d)
    fs.atomic_write(os.path.join(d, "f"), b"1")
    fs.rename(os.path.join(d, "f"), os.path.join(d, "g"))
    assert fs.listdir(d) == ["g"]
    fs.remove(os.path.join(d, "g"))
    fs.fsync_dir(d)
    fs.rmtree(str(tmp_path / "x"))
    assert not fs.exists(d)


# -- checkpoints and leader epochs -----------------------------------------------------------


def test_offset_checkpoint_format(tmp_path) -> None:
    fs = FileSystem()
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    write_offsets(fs, path, {("b", 1): 7, ("a-x", 0): 5})
    assert fs.read_bytes(path) == b"0\n2\na-x 0 5\nb 1 7\n"
    assert read_offsets(fs, path) == {("a-x", 0): 5, ("b", 1): 7}
    assert read_offsets(fs, str(tmp_path / "absent")) == {}
    assert format_checkpoint([]) == b"0\n0\n"


@pytest.mark.parametrize(
    "data", [b"", b"1\n0\n", b"0\n2\nt 0 1\n", b"0\nx\n", b"0\n1\nt 0\n", b"0\n1\nt 0 x\n", b"\xff"]
)
def test_corrupt_offset_checkpoint(tmp_path, data: bytes) -> None:
    path = tmp_path / "c"
    path.write_bytes(data)
    with pytest.raises(CorruptCheckpointError):
        read_offsets(FileSystem(), str(path))


def test_leader_epoch_cache_persists(tmp_path) -> None:
    fs = FileSystem()
    path = str(tmp_path / "leader-epoch-checkpoint")
    cache = LeaderEpochCache(fs, path)
    assert cache.latest_epoch == -1 and not cache.loaded_cleanly
    assert cache.assign(0, 0)
    assert not cache.assign(0, 10)
    assert cache.assign(3, 10)
    assert fs.read_bytes(path) == b"0\n2\n0 0\n3 10\n"
    with pytest.raises(ValueError):
        cache.assign(2, 20)
    assert cache.end_offset_for(0, 50) == (0, 10)
    assert cache.end_offset_for(2, 50) == (0, 10)
    assert cache.end_offset_for(3, 50) == (3, 50)
    assert cache.end_offset_for(-1, 50) == (-1, -1)
    assert cache.end_offset_for(4, 50) == (-1, -1)  # newer than any epoch here
    late = LeaderEpochCache(fs, str(tmp_path / "late-checkpoint"))  # a log that starts at 5
    assert late.end_offset_for(1, 9) == (-1, -1)  # no epoch recorded yet
    late.assign(3, 5)
    assert late.end_offset_for(1, 9) == (1, 5)  # older than every epoch here: where this log starts
    reloaded = LeaderEpochCache(fs, path)
    assert reloaded.loaded_cleanly and reloaded.entries == [(0, 0), (3, 10)]
    reloaded.truncate_from_end(10)
    assert LeaderEpochCache(fs, path).entries == [(0, 0)]


def test_corrupt_leader_epoch_checkpoint_is_ignored(tmp_path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n2\n3 10\n1 20\n")
    cache = LeaderEpochCache(FileSystem(), str(path))
    assert not cache.loaded_cleanly and cache.entries == []


# -- LogConfig -------------------------------------------------------------------------------


def test_log_config_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1073741824
    assert c.segment_ms == 604800000
    assert c.segment_index_bytes == 10485760
    assert c.index_interval_bytes == 4096
    assert c.max_message_bytes == 1048588
    assert c.message_timestamp_type == "CreateTime"
    assert c.retention_ms == 604800000 and c.retention_bytes == -1
    assert c.cleanup_policy == "delete"


def test_log_config_from_topic_configs() -> None:
    base = LogConfig(segment_bytes=1000)
    c = LogConfig.from_topic_configs(
        {
            "segment.ms": "60000",
            "message.timestamp.type": "LogAppendTime",
            "cleanup.policy": "delete,compact",
            "min.insync.replicas": "2",
            "preallocate": "true",
            "retention.bytes": None,
        },
        base,
    )
    assert c.segment_bytes == 1000 and c.segment_ms == 60000
    assert c.log_append_time and c.compact
    assert c.cleanup_policy == "delete,compact" and c.delete  # as set: Kafka describes a list so
    assert c.min_insync_replicas == 2
    assert c.extra == {"preallocate": "true"}
    assert c.to_topic_configs()["segment.ms"] == "60000"
    assert c.to_topic_configs()["min.insync.replicas"] == "2"
    assert base.extra == {}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("segment.bytes", "abc"),
        ("segment.bytes", "13"),
        ("segment.ms", "0"),
        ("segment.index.bytes", "3"),
        ("message.timestamp.type", "WallClock"),
        ("cleanup.policy", "shred"),
        ("cleanup.policy", ""),
        ("retention.ms", "-2"),
        ("compression.type", "brotli"),
        ("no.such.config", "1"),
    ],
)
def test_log_config_rejects_with_key_in_message(key: str, value: str) -> None:
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        LogConfig.from_topic_configs({key: value})


def test_log_config_from_broker_configs_precedence() -> None:
    c = LogConfig.from_broker_configs(
        {"log.retention.hours": "1", "log.retention.ms": "5000", "log.roll.hours": "2", "unrelated": "x"}
    )
    assert c.retention_ms == 5000
    assert c.segment_ms == 2 * 3600 * 1000
    assert LogConfig.from_broker_configs({"log.retention.hours": "-1"}).retention_ms == -1


def test_view_maps_the_files_bytes_and_outlives_the_file(tmp_path) -> None:
    fs = FileSystem()
    path = tmp_path / "seg.log"
    f = fs.open(str(path))
    assert len(f.view(0, 0)) == 0
    f.write(b"a" * 100_000)
    first = f.view(50_000, 10)  # n, pos
    assert first.readonly and bytes(first) == b"a" * 50_000
    f.write(b"b" * 100_000)  # past the mapped length: the next view maps the file anew
    second = f.view(99_000, 50_000)
    assert bytes(second) == b"a" * 50_000 + b"b" * 49_000
    assert bytes(first) == b"a" * 50_000  # the old mapping lives as long as its views
    with pytest.raises(ValueError):
        f.view(60_000, 150_000)  # past the end of the file
    with pytest.raises(TypeError):
        second[0] = 1  # type: ignore[index]
    f.close()
    os.unlink(path)  # as retention or the cleaner do while a response is queued
    assert bytes(second[-3:]) == b"bbb" and bytes(first[:3]) == b"aaa"


class _WritebackRecorder(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.started: list[tuple[int, int]] = []

    def _start_writeback(self, file: File, pos: int, length: int) -> bool:
        self.started.append((pos, length))
        return super()._start_writeback(file, pos, length)


def test_write_back_starts_on_whole_new_pages_once_there_are_enough(tmp_path) -> None:
    fs = _WritebackRecorder()
    f = fs.open(str(tmp_path / "f"))
    f.write(b"x" * (PAGE_SIZE + 10))
    assert not f.write_back(2 * PAGE_SIZE) and fs.started == []  # one whole page: fewer than asked for
    f.write(b"x" * (2 * PAGE_SIZE))
    assert f.write_back(2 * PAGE_SIZE) and fs.started == [(0, 3 * PAGE_SIZE)]  # the partial 4th page waits
    assert not f.write_back(0)  # nothing new
    f.write(b"x" * PAGE_SIZE)
    assert f.write_back(0) and fs.started[-1] == (3 * PAGE_SIZE, PAGE_SIZE)
    f.truncate(PAGE_SIZE + 1)  # bytes rewritten after a truncation are written back again
    f.write(b"y" * (3 * PAGE_SIZE))
    assert f.write_back(0) and fs.started[-1] == (PAGE_SIZE, 3 * PAGE_SIZE)
    assert f.pread(4 * PAGE_SIZE + 1, 0) == b"x" * (PAGE_SIZE + 1) + b"y" * (3 * PAGE_SIZE)
    f.close()
