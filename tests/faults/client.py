"""Test clients run inside a client namespace (`netns.Network.python`); each prints one JSON document.

create BOOTSTRAP TOPIC PARTITIONS RF MIN_ISR
metadata BOOTSTRAP TOPIC           {partition: [leader, replicas, isr]}
produce BOOTSTRAP TOPIC FIRST END SECONDS
                                   numbered records FIRST..END-1 spread over SECONDS with an
                                   idempotent acks=all confluent-kafka producer:
                                   {"acked": {n: [partition, offset]}, "errors": [str]}
read BOOTSTRAP TOPIC PARTITIONS    {n: [[partition, offset], ...]} of everything readable
raw-produce HOST TOPIC PARTITION TIMEOUT_MS
                                   one Produce (acks=-1) straight to HOST:9092:
                                   {"error_code": N} or {"error_code": null} if no answer came
"""

from __future__ import annotations

import json
import sys
import time

from tests.cluster.helpers import Sender, create_topic, partition_metadata, read_all

RAW_KEY = 999_999_999  # the record number raw-produce writes


def _raw_produce(host: str, topic: str, partition: int, timeout_ms: int) -> int | None:
    from protocol.records import Record, build_batch
    from tests.wire import RawClient

    batch = build_batch([Record(0, 0, str(RAW_KEY).encode(), b"sent straight to one broker")])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }
    try:
        with RawClient(9092, timeout=timeout_ms / 1000 + 5, host=host) as c:
            answer = c.request(0, 7, body)
    except OSError:  # timed out or refused: no answer
        return None
    return int(answer.responses[0].partition_responses[0].error_code)


def main(argv: list[str]) -> object:
    cmd, *args = argv
    if cmd == "create":
        bootstrap, topic, partitions, rf, min_isr = args
        create_topic(bootstrap, topic, int(partitions), int(rf), **{"min.insync.replicas": min_isr})
        return {"created": topic}
    if cmd == "metadata":
        return partition_metadata(args[0], args[1])
    if cmd == "produce":
        bootstrap, topic, first, end, seconds = args
        sender = Sender(bootstrap, topic, **{"message.timeout.ms": 120000})
        numbers = range(int(first), int(end))
        step = max(1, len(numbers) // 100)
        began = time.monotonic()
        for k, start in enumerate(range(numbers.start, numbers.stop, step)):
            sender.send(range(start, min(start + step, numbers.stop)))
            due = began + float(seconds) * (k + 1) / 100
            while (left := due - time.monotonic()) > 0:
                sender.producer.poll(left)
        sender.producer.flush(150)
        return {"acked": sender.acked, "errors": [str(e) for e in sender.errors]}
    if cmd == "read":
        return read_all(args[0], args[1], int(args[2]))
    if cmd == "raw-produce":
        host, topic, partition, timeout_ms = args
        return {"error_code": _raw_produce(host, topic, int(partition), int(timeout_ms))}
    raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
