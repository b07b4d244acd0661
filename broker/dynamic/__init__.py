"""Dynamic broker configs: Kafka's KIP-226 configs changed while brokers run, and KIP-412 log levels.

- `keys`: which broker keys may change dynamically, at which level, their types and checks.
- `store`: where they are kept (ZooKeeper's ``/config/brokers/<id>`` and
  ``/config/brokers/<default>`` in a cluster, a file in the data directory on one broker).
- `configs`: `DynamicBrokerConfigs`, the effective values (dynamic per-broker > dynamic
  cluster default > static > default), kept current and announced to the parts that act on them.
- `passwords`: Kafka's encoding of password configs in ZooKeeper.
- `loggers`: the BROKER_LOGGER resource (Python logging levels, not persisted).
"""
