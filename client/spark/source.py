"""`MiniKafkaDataSource`: the ``minikafka`` format for Spark (Python Data Source API, pyspark 4.x).

Options are parsed when Spark asks for a reader or writer, so a mistake fails
the query at once with the option named (`client.spark.options`).
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from client.spark.options import parse_read_options, parse_write_options
from client.spark.schema import kafka_schema


class MiniKafkaDataSource(DataSource):
    """``spark.read/readStream/write/writeStream.format("minikafka")`` over a minikafka (or Kafka) broker."""

    @classmethod
    def name(cls) -> str:
        return "minikafka"

    def _include_headers(self) -> bool:
        value = next((v for k, v in self.options.items() if k.lower() == "includeheaders"), "false")
        return str(value).strip().lower() == "true"

    def schema(self) -> StructType:
        return kafka_schema(self._include_headers())

    def reader(self, schema: StructType) -> DataSourceReader:
        from client.spark.reader import MiniKafkaBatchReader

        return MiniKafkaBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from client.spark.stream import MiniKafkaStreamReader

        return MiniKafkaStreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from client.spark.writer import MiniKafkaWriter, check_schema

        wo = parse_write_options(self.options)
        check_schema(schema, wo)
        return MiniKafkaWriter(wo)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from client.spark.writer import MiniKafkaStreamWriter, check_schema

        wo = parse_write_options(self.options)
        check_schema(schema, wo)
        return MiniKafkaStreamWriter(wo)
