"""`make bench`: every benchmark suite, each figure beside a baseline measured in the same run.

Suites (`--suites`, default all), each printing its own table:
- `broker` (bench/broker.py): physical limits (iperf3 loopback, fio disk
  write + fsync), load-generator ceilings (confluent-kafka, kcat), the Redis
  Streams peer, the produce/consume matrix, 1 MB batches, end-to-end latency,
  broker RSS and py-spy profiles, then issue 9's goals as ratios;
- `groups` (bench/groups.py): rebalance latency, OffsetCommit throughput;
- `storage` (bench/storage.py): lookup latency at 1M and 50M records,
  unclean recovery, cleaner throughput;
- `client` (bench/client.py): our client against kafka-python, aiokafka and
  confluent-kafka;
- `spark` (bench/spark.py): the Spark data source against a synthetic Arrow
  source in the same Spark session;
- `cluster` (bench/cluster.py): three brokers on ZooKeeper against one broker:
  RF 3 acks=all produce, consume, and failover time after a SIGKILL;
- `reassign` (bench/reassign.py): a reassignment's copy rate against a follower's
  catch-up, a throttled copy against its throttle, and an acks=all producer's p99
  during a throttled move against none;
- `versions` (bench/versions.py): Produce and Fetch requests/s at Kafka 4's
  newest versions beside the old ones;
- `transactions` (bench/transactions.py): transactional produce beside
  idempotent produce (with the broker's answer times of Produce,
  AddPartitionsToTxn and EndTxn), read_committed consume beside read_uncommitted;
- `security` (bench/security.py): kcat over SASL_SSL beside PLAINTEXT, and
  produce with 10,000 ACLs beside no authorizer;
- `console` (bench/console.py): console page times (server, browser) and the lag sampler's cost;
- `tiered` (bench/tiered.py): uploads to a SeaweedFS and reads back from it, against the store's
  own put/get rates and the same records read from local disk.

`--quick` runs the broker suite with fewer records per cell. Shared, noisy
machines: the ratios are the result, not the absolute figures.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser(prog="make bench")
    ap.add_argument("--quick", action="store_true", help="fewer records per broker-suite cell")
    ap.add_argument(
        "--suites",
        default="broker,groups,storage,client,spark,cluster,reassign,versions,transactions,security,console,tiered",
        help="comma-separated: broker, groups, storage, client, spark, cluster, reassign, versions, transactions,"
        " security, console, tiered",
    )
    args = ap.parse_args()
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    for name in suites:
        print(f"\n== bench.{name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        if name in ("broker", "versions"):
            module.run(quick=args.quick)
        else:
            module.run()  # each suite prints its own table


if __name__ == "__main__":
    main()
