"""The partitions this broker hosts: their logs, roles, leader epochs, ISR and high watermarks.

`ReplicaManager` (manager.py) owns one `Partition` (partition.py) per local
partition log. Handlers, the group coordinator's store and the log tasks reach
partitions only through it; it never talks to the network or to ZooKeeper:
who leads what is told to it by the cluster side (`broker.cluster`).
"""

from broker.replica.manager import AppendOutcome, ReplicaManager, TopicPartition
from broker.replica.partition import Partition

__all__ = ["AppendOutcome", "Partition", "ReplicaManager", "TopicPartition"]
