"""minikafka's Python client: Kafka's producer, consumer and admin client, speaking only `protocol/`.

Synchronous clients (`Producer`, `Consumer`, `AdminClient`) run their I/O on a
background event loop thread; the asyncio ones (`AIOProducer`, `AIOConsumer`,
`AIOAdminClient`) run on the caller's loop. Configuration uses Kafka's key
names (``{"bootstrap.servers": "localhost:9092"}`` or ``bootstrap_servers=...``).

    from client import Producer, Consumer

    with Producer(bootstrap_servers="localhost:9092") as p:
        p.send("demo", b"hello", key=b"k").get(10)
    with Consumer("demo", group_id="g", auto_offset_reset="earliest") as c:
        for record in c.poll(5.0):
            print(record.offset, record.key, record.value)
"""

from client.admin import AdminClient, AIOAdminClient, ConfigEntry, GroupDescription, NewTopic, PartitionLag
from client.consumer import AIOConsumer, Consumer, ConsumerRebalanceListener, ConsumerRecords
from client.errors import (
    AuthenticationError,
    ClientClosedError,
    CommitFailedError,
    ConfigError,
    IllegalStateError,
    InvalidTxnStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    ProducerFencedError,
    RecordTooLargeError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionalIdAuthorizationError,
)
from client.producer import AIOProducer, DeliveryFuture, Producer
from client.types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    TopicPartition,
)

__all__ = [
    "AIOAdminClient",
    "AIOConsumer",
    "AIOProducer",
    "AdminClient",
    "AuthenticationError",
    "ClientClosedError",
    "CommitFailedError",
    "ConfigEntry",
    "ConfigError",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerRecords",
    "DeliveryFuture",
    "GroupDescription",
    "IllegalStateError",
    "InvalidTxnStateError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaResponseError",
    "KafkaTimeoutError",
    "NewTopic",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionLag",
    "Producer",
    "ProducerFencedError",
    "RecordMetadata",
    "RecordTooLargeError",
    "TopicPartition",
    "TransactionAbortableError",
    "TransactionAbortedError",
    "TransactionalIdAuthorizationError",
]
