"""Kafka's ZooKeeper layout (ZK mode, Kafka 2.x/3.x): paths and the JSON each znode holds. No I/O.

    /cluster/id                                   {"version":"1","id":"<cluster id>"}
    /controller                 (ephemeral)       {"version":2,"brokerid":N,"timestamp":"<ms>"}
    /controller_epoch                             "<epoch>" (text)
    /brokers/ids/<id>           (ephemeral)       {"version":5,"host":H,"port":P,"endpoints":["NAME://H:P",...],
                                                   "listener_security_protocol_map":{"NAME":"PLAINTEXT",...},
                                                   "rack":"<broker.rack>" or null,"jmx_port":-1,
                                                   "timestamp":"<ms>"}
    /brokers/topics/<t>                           {"version":3,"topic_id":"<base64>",
                                                   "partitions":{"0":[1,2,3],...},
                                                   "adding_replicas":{"0":[4]},"removing_replicas":{"0":[1]}}
    /admin/reassign_partitions                    {"version":1,"partitions":[{"topic":T,"partition":P,
                                                   "replicas":[...]},...]} (reassignments asked through ZooKeeper)
    /brokers/topics/<t>/partitions/<p>/state      {"controller_epoch":C,"leader":L,"version":1,
                                                   "leader_epoch":E,"isr":[...]}
    /config/topics/<t>                            {"version":1,"config":{"retention.ms":"..."}}
    /admin/delete_topics/<t>                      (empty: a deletion request)
    /latest_producer_id_block                     {"version":1,"broker":N,"block_start":"S","block_end":"E"}

The creation zxid of /brokers/ids/<id> is the broker epoch; the znode version
of a partition state is its partition epoch, used for conditional writes. A
topic written by Kafka before 2.8 has no "topic_id"; the controller adds one.
While a partition is reassigned its replica list is the target replicas
followed by the original ones not in the target; ``adding_replicas`` and
``removing_replicas`` name the differences (only partitions being reassigned
appear in them).
Decoders raise `ValueError` on anything malformed.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from broker.cluster.view import BrokerNode
from storage import topic_ids

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
PERSISTENT_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, DELETE_TOPICS, "/cluster")

PRODUCER_ID_BLOCK_SIZE = 1000


def broker_path(node_id: int) -> str:
    return f"{BROKER_IDS}/{node_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _now_ms() -> str:
    return str(int(time.time() * 1000))


def _load(data: bytes, what: str) -> dict:  # type: ignore[type-arg]
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what}: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{what}: not a JSON object")
    return doc


def _int_list(value: object, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{what}: expected a list of broker ids, got {value!r}")
    return list(value)


# -- brokers ------------------------------------------------------------------------------------


def encode_broker(b: BrokerNode) -> bytes:
    endpoints = b.endpoints or (("PLAINTEXT", b.host, b.port),)
    return json.dumps(
        {
            "version": 5,
            "host": b.host,
            "port": b.port,
            "endpoints": [f"{name}://{_bracket(host)}:{port}" for name, host, port in endpoints],
            "listener_security_protocol_map": {
                name: dict(b.protocols).get(name, "PLAINTEXT") for name, _, _ in endpoints
            },
            "rack": b.rack,
            "jmx_port": -1,
            "features": {},
            "timestamp": _now_ms(),
        }
    ).encode()


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def decode_broker(node_id: int, data: bytes) -> BrokerNode:
    """Every endpoint of a registration (Kafka's or ours).

    host/port: the PLAINTEXT listener's, else the first listener's, else the legacy fields.
    """
    doc = _load(data, f"broker {node_id}")
    endpoints = []
    for endpoint in doc.get("endpoints") or []:
        name, _, address = str(endpoint).partition("://")
        host, _, port = address.rpartition(":")
        if name and port.isdigit():
            endpoints.append((name.upper(), host.strip("[]"), int(port)))
    if endpoints:
        _, host, port = next((e for e in endpoints if e[0] == "PLAINTEXT"), endpoints[0])
        given = doc.get("listener_security_protocol_map")
        given = given if isinstance(given, dict) else {}
        protocols = tuple((name, str(given.get(name, "PLAINTEXT")).upper()) for name, _, _ in endpoints)
        return BrokerNode(node_id, host, port, _rack(node_id, doc), tuple(endpoints), protocols)
    host, port = doc.get("host"), doc.get("port")
    if not isinstance(host, str) or not isinstance(port, int):
        raise ValueError(f"broker {node_id}: no endpoint")
    return BrokerNode(node_id, host, port, _rack(node_id, doc))


def _rack(node_id: int, doc: dict) -> str | None:  # type: ignore[type-arg]
    """The registration's ``rack``: a string, or null / absent for a broker without ``broker.rack``."""
    rack = doc.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ValueError(f"broker {node_id}: rack {rack!r} is not a string")
    return rack


# -- topics -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """A topic znode: its ID (None if written by a Kafka without IDs), each partition's replicas and,
    for partitions being reassigned, the replicas being added and removed."""

    topic_id: uuid.UUID | None
    replicas: dict[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)


def encode_assignment(
    assignment: dict[int, list[int]],
    topic_id: uuid.UUID | None,
    adding: dict[int, list[int]] | None = None,
    removing: dict[int, list[int]] | None = None,
) -> bytes:
    """The topic znode; ``adding``/``removing``: partitions being reassigned (empty lists are left out)."""
    doc: dict[str, object] = {"version": 3}
    if topic_id is not None:
        doc["topic_id"] = topic_ids.to_text(topic_id)
    doc["partitions"] = {str(p): replicas for p, replicas in sorted(assignment.items())}
    doc["adding_replicas"] = {str(p): r for p, r in sorted((adding or {}).items()) if r}
    doc["removing_replicas"] = {str(p): r for p, r in sorted((removing or {}).items()) if r}
    return json.dumps(doc).encode()


def decode_assignment(topic: str, data: bytes) -> TopicAssignment:
    doc = _load(data, f"topic {topic}")
    text_id = doc.get("topic_id")
    try:
        topic_id = None if text_id is None else topic_ids.from_text(text_id)
    except ValueError as exc:
        raise ValueError(f"topic {topic}: {exc}") from None
    partitions = doc.get("partitions")
    if not isinstance(partitions, dict):
        raise ValueError(f"topic {topic}: no partitions")
    out = {}
    for key, replicas in partitions.items():
        if not str(key).isdigit():
            raise ValueError(f"topic {topic}: partition {key!r}")
        out[int(key)] = _int_list(replicas, f"topic {topic} partition {key}")
    if sorted(out) != list(range(len(out))):
        raise ValueError(f"topic {topic}: partitions are not 0..{len(out) - 1}")
    changes = []
    for name in ("adding_replicas", "removing_replicas"):
        given = doc.get(name) or {}
        if not isinstance(given, dict):
            raise ValueError(f"topic {topic}: {name} is not an object")
        parsed = {}
        for key, replicas in given.items():
            if not str(key).isdigit() or int(key) not in out:
                raise ValueError(f"topic {topic}: {name} of partition {key!r}")
            parsed[int(key)] = _int_list(replicas, f"topic {topic} {name} of {key}")
        changes.append({p: r for p, r in parsed.items() if r})
    return TopicAssignment(topic_id, out, changes[0], changes[1])


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition state znode: who leads, since which epoch, which replicas are in sync."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


def encode_state(s: LeaderAndIsr) -> bytes:
    return json.dumps(
        {
            "controller_epoch": s.controller_epoch,
            "leader": s.leader,
            "version": 1,
            "leader_epoch": s.leader_epoch,
            "isr": list(s.isr),
        }
    ).encode()


def decode_state(what: str, data: bytes) -> LeaderAndIsr:
    doc = _load(data, what)
    try:
        return LeaderAndIsr(
            int(doc["leader"]),
            int(doc["leader_epoch"]),
            tuple(_int_list(doc["isr"], what)),
            int(doc["controller_epoch"]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{what}: {exc!r}") from None


def encode_topic_config(configs: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": dict(sorted(configs.items()))}).encode()


def decode_topic_config(topic: str, data: bytes) -> dict[str, str]:
    doc = _load(data, f"config of {topic}")
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError(f"config of {topic}: not an object")
    return {str(k): str(v) for k, v in config.items()}


# -- controller and cluster ---------------------------------------------------------------------


def encode_controller(node_id: int) -> bytes:
    return json.dumps({"version": 2, "brokerid": node_id, "timestamp": _now_ms()}).encode()


def decode_controller(data: bytes) -> int:
    return int(_load(data, "controller")["brokerid"])


def encode_cluster_id(cluster_id: str) -> bytes:
    return json.dumps({"version": "1", "id": cluster_id}).encode()


def decode_cluster_id(data: bytes) -> str:
    cluster_id = _load(data, "cluster id").get("id")
    if not isinstance(cluster_id, str) or not cluster_id:
        raise ValueError("cluster id: no id")
    return cluster_id


def encode_producer_id_block(node_id: int, start: int) -> bytes:
    end = start + PRODUCER_ID_BLOCK_SIZE - 1
    return json.dumps(
        {"version": 1, "broker": node_id, "block_start": str(start), "block_end": str(end)}
    ).encode()


def decode_producer_id_block_end(data: bytes) -> int:
    """The last id of the newest block (-1 when the znode is empty: no block handed out yet)."""
    if not data:
        return -1
    return int(_load(data, "producer id block")["block_end"])


# -- /admin/reassign_partitions -----------------------------------------------------------------


def encode_reassignments(targets: dict[tuple[str, int], list[int]]) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())
            ],
        }
    ).encode()


def decode_reassignments(data: bytes) -> dict[tuple[str, int], list[int]]:
    """{(topic, partition): target replicas} of ``/admin/reassign_partitions``."""
    doc = _load(data, "reassign_partitions")
    entries = doc.get("partitions")
    if not isinstance(entries, list):
        raise ValueError("reassign_partitions: no partitions list")
    out: dict[tuple[str, int], list[int]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"reassign_partitions: entry {entry!r}")
        topic, partition = entry.get("topic"), entry.get("partition")
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise ValueError(f"reassign_partitions: entry {entry!r}")
        out[(topic, partition)] = _int_list(entry.get("replicas"), f"reassign_partitions {topic}-{partition}")
    return out
