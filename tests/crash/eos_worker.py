"""A consume-transform-produce worker, exactly-once with Kafka transactions (confluent-kafka).

Reads ``in`` (read_committed, group ``eos``, static member), writes each value
upper-cased to the same partition of ``out``, and commits its input offsets in
the same transaction (send_offsets_to_transaction). Any error ends the
process with exit code 1: the test restarts it, and the new incarnation
(same transactional.id) fences the old one and resumes from the offsets the
last committed transaction stored; so does a round stuck for STUCK_S seconds
(exit code 1 after a stack dump). Exits 0 once it has processed everything
up to the input's end (``--total`` records in all).

Usage: python -m tests.crash.eos_worker BOOTSTRAP TOTAL
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

STUCK_S = 45
BATCH = 100  # small transactions: 1,000 of them, so the kills land in the middle of the work


def main(bootstrap: str, total: int) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "eos",
            "group.instance.id": "eos-worker",
            "session.timeout.ms": 6000,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "eos-worker",
            "transaction.timeout.ms": 10000,
            **({"debug": os.environ["EOS_WORKER_DEBUG"]} if os.environ.get("EOS_WORKER_DEBUG") else {}),
        }
    )
    producer.init_transactions(60)
    consumer.subscribe(["in"])
    idle_since = time.monotonic()
    while True:
        # librdkafka 2.16 can wait forever in send_offsets_to_transaction when the broker dies right
        # after AddOffsetsToTxn (its API timeout does not fire): a stuck round counts as one more crash
        faulthandler.dump_traceback_later(STUCK_S, exit=True)
        msgs = [m for m in consumer.consume(BATCH, 0.5) if m.error() is None]
        if not msgs:
            assignment = consumer.assignment()
            if assignment and time.monotonic() - idle_since > 2:
                committed = consumer.committed(assignment, 10)
                if sum(max(tp.offset, 0) for tp in committed) >= total:
                    return 0
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        for m in msgs:
            producer.produce("out", m.value().upper(), key=m.key(), partition=m.partition())
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1)  # the test asks for a stack dump before giving up on it
    try:
        sys.exit(main(sys.argv[1], int(sys.argv[2])))
    except KafkaException as exc:
        print(f"eos_worker: {exc}", file=sys.stderr)
        sys.exit(1)
