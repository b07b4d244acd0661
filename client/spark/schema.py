"""The Spark schema of a minikafka read: exactly that of Spark's built-in Kafka source."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def kafka_schema(include_headers: bool = False) -> StructType:
    """key, value, topic, partition, offset, timestamp, timestampType (+ headers with includeHeaders)."""
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
    if include_headers:
        header = StructType(
            [StructField("key", StringType(), True), StructField("value", BinaryType(), True)]
        )
        fields.append(StructField("headers", ArrayType(header, True), True))
    return StructType(fields)
