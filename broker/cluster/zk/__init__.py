"""Cluster mode: brokers coordinated through ZooKeeper with Kafka's own znode layout (Kafka's ZK mode).

- znodes.py: paths and the JSON of each znode (pure, no I/O);
- session.py: the kazoo session, bridged to the event loop;
- controller.py: the controller (elected through /controller);
- cluster.py: `ZkCluster`, the ClusterView/TopicAdmin of a cluster member.
"""
