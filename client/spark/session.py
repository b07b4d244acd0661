"""A Spark session with the ``minikafka`` format registered, for scripts, tests and benchmarks."""

from __future__ import annotations

import os
import sys
from typing import Any


def local_session(
    app: str, master: str = "local[2]", shuffle_partitions: int = 4, loopback: bool = True
) -> Any:
    """``SparkSession`` on ``master`` (no UI, UTC, quiet logs) with `MiniKafkaDataSource` registered.

    Spark's Python workers use this interpreter unless PYSPARK_PYTHON says
    otherwise; ``loopback`` binds the driver to 127.0.0.1 (local masters).
    """
    from pyspark.sql import SparkSession

    from client.spark.source import MiniKafkaDataSource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    )
    if loopback:
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(MiniKafkaDataSource)
    return session
