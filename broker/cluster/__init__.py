"""What the cluster looks like and how topics are changed in it.

- `ClusterView` (view.py): a read-only picture of the brokers, the controller
  and every topic's partitions (leader, leader epoch, replicas, ISR, offline
  replicas). Metadata, FindCoordinator and the admin handlers read it.
- `TopicAdmin` (view.py): create and delete topics and change their configs.
- `LocalCluster` (local.py): both for a single broker with no ZooKeeper,
  derived from the local topic registry; every partition is led by this broker.

Handlers see only these interfaces, never which implementation is behind them.
"""

from broker.cluster.local import LocalCluster
from broker.cluster.view import BrokerNode, ClusterView, PartitionState, TopicAdmin, TopicState

__all__ = ["BrokerNode", "ClusterView", "LocalCluster", "PartitionState", "TopicAdmin", "TopicState"]
