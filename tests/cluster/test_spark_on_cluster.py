"""The Spark data source against a three-broker cluster: each partition read from its leader, before and
after a leader is SIGKILLed."""

from __future__ import annotations

import os

import pytest

from tests.broker_process import REPO
from tests.cluster.helpers import Sender, create_topic, partition_metadata, wait_for
from tests.cluster_process import Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]
pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")


def test_spark_reads_every_partition_from_its_leader_and_after_a_failover(cluster: Cluster) -> None:
    from client.spark.session import local_session

    create_topic(cluster.bootstrap, "sp", 4, 3, **{"min.insync.replicas": "2"})
    sender = Sender(cluster.bootstrap, "sp")
    sender.send(range(4000))
    sender.flush()
    leaders = {leader for leader, _, _ in partition_metadata(cluster.bootstrap, "sp").values()}
    assert len(leaders) >= 2  # the read really spans several brokers

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    spark = local_session("minikafka-cluster-test", shuffle_partitions=2)
    try:

        def keys() -> list[int]:
            df = (
                spark.read.format("minikafka")
                .option("kafka.bootstrap.servers", cluster.bootstrap)
                .option("subscribe", "sp")
                .option("startingOffsets", "earliest")
                .load()
            )
            return sorted(int(r.key) for r in df.selectExpr("cast(key as string) as key").collect())

        assert keys() == list(range(4000))
        victim = partition_metadata(cluster.bootstrap, "sp")[0][0]
        cluster.kill(victim)
        survivor = cluster.brokers[next(n for n in cluster.brokers if n != victim)].bootstrap
        wait_for(
            lambda: all(
                leader not in (victim, -1) for leader, _, _ in partition_metadata(survivor, "sp").values()
            ),
            30,
            "the dead broker's partitions led elsewhere",
        )
        assert keys() == list(range(4000))
    finally:
        spark.stop()
