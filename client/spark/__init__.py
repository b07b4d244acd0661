"""A PySpark data source for minikafka: batch and streaming reads and writes, no JVM jars.

Usage::

    from client.spark import MiniKafkaDataSource

    spark.dataSource.register(MiniKafkaDataSource)
    df = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "events")
        .load()
    )

Schema and option names are those of Spark's built-in Kafka source. Planning
(metadata and ListOffsets) happens on the driver; each input partition is one
offset range of one topic partition, fetched inside its executor task directly
from the broker and yielded as Arrow record batches.

Modules: `options` (parsing and validation), `planning` (driver side:
partitions, offsets, splitting, rate limits), `reader` (batch reads and the
executor's range reader), `stream` (streaming reads), `writer` (batch and
streaming writes), `arrow` (record columns to Arrow), `schema`, `source`
(the `DataSource` itself), `session` (a local Spark session with the format
registered), `example_job` (a runnable example).
"""

from client.spark.options import MiniKafkaOptionError
from client.spark.planning import DataLossError, split_ranges
from client.spark.schema import kafka_schema
from client.spark.source import MiniKafkaDataSource

__all__ = ["DataLossError", "MiniKafkaDataSource", "MiniKafkaOptionError", "kafka_schema", "split_ranges"]
