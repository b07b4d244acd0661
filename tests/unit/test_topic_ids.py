"""Topic IDs: Kafka's text form, partition.metadata, and how the registry gives and keeps them."""

from __future__ import annotations

import json
import uuid

import pytest

from storage import naming, topic_ids
from storage.fs import FileSystem
from storage.log_manager import LogManager

# Kafka's Uuid.toString: base64url of the 16 bytes without padding. The metadata topic's ID is the
# documented "AAAAAAAAAAAAAAAAAAAAAQ" (Uuid(0, 1)); the zero UUID is 22 'A's.
KNOWN = [
    (uuid.UUID(int=0), "A" * 22),
    (uuid.UUID(int=1), "A" * 21 + "Q"),
    (uuid.UUID(bytes=bytes(range(16))), "AAECAwQFBgcICQoLDA0ODw"),
    (uuid.UUID(bytes=b"\xff" * 16), "_____________________w"),
]


@pytest.mark.parametrize(("value", "text"), KNOWN)
def test_text_form(value: uuid.UUID, text: str) -> None:
    assert topic_ids.to_text(value) == text
    assert topic_ids.from_text(text) == value


@pytest.mark.parametrize(
    "text", ["", "A" * 21, "A" * 23, "A" * 20 + "==", "AAAAAAAAAAAAAAAAAAAA+/", "AAAAAAAAAAAAAAAAAAAA A"]
)
def test_bad_text_form(text: str) -> None:
    with pytest.raises(ValueError, match="not a topic id"):
        topic_ids.from_text(text)


def test_new_ids_are_ones_kafka_accepts() -> None:
    seen = {topic_ids.new_topic_id() for _ in range(2000)}
    assert len(seen) == 2000
    for topic_id in seen:
        assert topic_id not in (topic_ids.ZERO, topic_ids.METADATA_TOPIC_ID)
        assert not topic_ids.to_text(topic_id).startswith("-")


def test_partition_metadata_file(tmp_path) -> None:
    fs = FileSystem()
    d = str(tmp_path)
    assert topic_ids.read_partition_metadata(fs, d) is None
    value = uuid.UUID(bytes=bytes(range(16)))
    topic_ids.write_partition_metadata(fs, d, value)
    assert (tmp_path / "partition.metadata").read_bytes() == b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    assert topic_ids.read_partition_metadata(fs, d) == value
    # What Kafka reads: "key:<whitespace>value" lines; a later version keeps the two lines.
    (tmp_path / "partition.metadata").write_text("version:   1\ntopic_id:\tAAECAwQFBgcICQoLDA0ODw\n")
    assert topic_ids.read_partition_metadata(fs, d) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "unsupported version"),
        ("version: 0\n", "not a topic id"),
        ("version: x\ntopic_id: AAECAwQFBgcICQoLDA0ODw", "unsupported version"),
        ("version:0\ntopic_id: AAECAwQFBgcICQoLDA0ODw", "malformed line"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "zero topic id"),
        ("version: 0\ntopic_id: nope", "not a topic id"),
    ],
)
def test_damaged_partition_metadata(tmp_path, text: str, reason: str) -> None:
    (tmp_path / "partition.metadata").write_text(text)
    with pytest.raises(ValueError, match=reason):
        topic_ids.read_partition_metadata(FileSystem(), str(tmp_path))


def _registry(data) -> dict:
    return json.loads((data / naming.TOPICS_FILE).read_text())["topics"]


def test_ids_are_kept_across_restarts_and_new_for_a_recreated_topic(tmp_path) -> None:
    data = tmp_path / "data"
    with LogManager(str(data)) as mgr:
        mgr.create_topic("t", 2)
        first = mgr.topics()["t"].topic_id
        mgr.add_partitions("t", 3)
        assert topic_ids.read_partition_metadata(FileSystem(), str(data / "t-2")) == first
    with LogManager(str(data)) as mgr:
        assert mgr.topics()["t"].topic_id == first
        mgr.alter_topic_configs("t", {"retention.ms": "1000"})
        assert mgr.topics()["t"].topic_id == first
        mgr.delete_topic("t")
        mgr.create_topic("t", 1)
        second = mgr.topics()["t"].topic_id
    assert second != first
    assert topic_ids.read_partition_metadata(FileSystem(), str(data / "t-0")) == second


def test_a_registry_without_ids_takes_them_from_the_partitions_or_the_cluster(tmp_path) -> None:
    """A data directory of an older minikafka: the ID in partition.metadata where there is one, else
    none (ZERO) until the cluster assigns one with set_topic_id, which persists it."""
    data = tmp_path / "data"
    with LogManager(str(data)) as mgr:
        mgr.create_topic("old", 2)
        mgr.create_topic("kafka", 1)
        kept = mgr.topics()["kafka"].topic_id
    doc = json.loads((data / naming.TOPICS_FILE).read_text())
    for entry in doc["topics"].values():
        del entry["topic_id"]
    (data / naming.TOPICS_FILE).write_text(json.dumps(doc))
    (data / "old-0" / "partition.metadata").unlink()
    (data / "old-1" / "partition.metadata").unlink()
    assigned = topic_ids.new_topic_id()
    with LogManager(str(data)) as mgr:
        topics = mgr.topics()
        assert topics["kafka"].topic_id == kept
        assert topics["old"].topic_id == topic_ids.ZERO
        assert not (data / "old-0" / "partition.metadata").exists()
        with pytest.raises(ValueError, match="has id"):
            mgr.set_topic_id("kafka", assigned)
        mgr.set_topic_id("old", assigned)
        mgr.set_topic_id("old", assigned)  # the same again: nothing to do
    assert _registry(data)["old"]["topic_id"] == topic_ids.to_text(assigned)
    for p in (0, 1):
        assert topic_ids.read_partition_metadata(FileSystem(), str(data / f"old-{p}")) == assigned
    with LogManager(str(data)) as mgr:
        assert mgr.topics()["old"].topic_id == assigned


@pytest.mark.parametrize("damage", ["missing", "other id", "garbage"])
def test_partition_metadata_follows_the_registry(tmp_path, damage: str) -> None:
    data = tmp_path / "data"
    with LogManager(str(data)) as mgr:
        mgr.create_topic("t", 1)
        topic_id = mgr.topics()["t"].topic_id
    path = data / "t-0" / "partition.metadata"
    if damage == "missing":
        path.unlink()
    elif damage == "other id":
        topic_ids.write_partition_metadata(FileSystem(), str(data / "t-0"), topic_ids.new_topic_id())
    else:
        path.write_bytes(b"\x00\xff garbage")
    with LogManager(str(data)) as mgr:
        assert mgr.topics()["t"].topic_id == topic_id
    assert topic_ids.read_partition_metadata(FileSystem(), str(data / "t-0")) == topic_id


def test_a_damaged_registry_id_stops_the_broker(tmp_path) -> None:
    data = tmp_path / "data"
    with LogManager(str(data)) as mgr:
        mgr.create_topic("t", 1)
    doc = json.loads((data / naming.TOPICS_FILE).read_text())
    doc["topics"]["t"]["topic_id"] = "not-an-id"
    (data / naming.TOPICS_FILE).write_text(json.dumps(doc))
    with pytest.raises(Exception, match="not a topic id"):
        LogManager(str(data))
