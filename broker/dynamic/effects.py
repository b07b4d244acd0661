"""Who acts on each applied dynamic broker config, and the checks those parts make first.

`connect` registers, on the broker's `DynamicBrokerConfigs`, a callback and the
checks of Kafka's reconfigurable parts (their validateReconfiguration; a
refusal is `keys.invalid_dynamic`'s message):

- the broker defaults of topic configs (``log.retention.ms``, ``log.segment.bytes``,
  ``log.cleanup.policy``, ``message.max.bytes``, ``min.insync.replicas``...): the
  log manager rebuilds every topic's config from its overrides over the new
  defaults (`LogManager.set_default_config`), so topics without an override
  follow at once: the next retention check deletes by the new limits, the next
  append rolls by the new segment size. Checked: the defaults still make a
  valid log config; ``log.local.retention.*`` against ``log.retention.*``
  (Kafka's DynamicLogConfig: the time first, whether or not tiered storage is on).
- ``log.cleaner.threads``, ``log.cleaner.backoff.ms``,
  ``log.cleaner.dedupe.buffer.size``: `LogTasks.reconfigure_cleaner`. Checked as
  Kafka's LogCleaner: at least 1 thread, no fewer than half and no more than
  double the running number.
- ``unclean.leader.election.enable``: the controller's default for topics
  without their own (`ZkCluster.set_unclean_default`; it elects at once where it
  now can). A single broker has nothing to elect.
- ``producer.id.expiration.ms``: `ReplicaManager.producer_expiration_ms`.
- ``listener.name.<l>.ssl.*`` key and trust stores: `BrokerSecurity.reconfigure_tls`
  (connections accepted afterwards get the new stores; the broker's own
  connections to the others too). Checked: the new stores load and keep the
  certificate's subject and host names (Kafka's SslFactory rule).
- ``max.connections``, ``max.connections.per.ip``,
  ``max.connections.per.ip.overrides``: read at each accept (broker/connection.py).
- ``leader.replication.throttled.rate``, ``follower.replication.throttled.rate``:
  the replication throttles' quotas (`ReplicaManager.throttles`,
  broker/replica/throttle.py); Kafka's LONG_MAX default: no limit.
- thread pool sizes (stored only): checked as Kafka's DynamicThreadPool, so a
  value Kafka would refuse is refused here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from broker.dynamic.configs import FOLLOWER_RATE, LEADER_RATE, LONG_MAX, DynamicBrokerConfigs, default_text
from broker.dynamic.keys import SSL_STORE_KEYS, invalid_dynamic, split_listener_key
from storage.config import BROKER_CONFIG_NAMES, LogConfig
from storage.remote_config import check_local_retention

if TYPE_CHECKING:
    from broker.log_tasks import LogTasks
    from broker.replica import ReplicaManager
    from broker.security.broker_security import BrokerSecurity
    from storage.log_manager import LogManager

log = logging.getLogger("minikafka.config")

CLEANER_KEYS = frozenset(
    {
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "message.max.bytes",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms",
    }
)
THREAD_POOL_KEYS = (
    "num.io.threads",
    "num.network.threads",
    "num.replica.fetchers",
    "num.recovery.threads.per.data.dir",
    "background.threads",
)
LOCAL_RETENTION_KEYS = frozenset(
    {
        "log.local.retention.ms",
        "log.local.retention.bytes",
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "log.retention.bytes",
    }
)


class UncleanDefault(Protocol):
    def set_unclean_default(self, enabled: bool) -> None: ...


def _getter(effective: Mapping[str, str]) -> Callable[[str], str]:
    def get(key: str) -> str:
        found = effective.get(key)
        return str(found if found is not None else default_text(key))

    return get


def _ssl_store_key(name: str) -> bool:
    scoped = split_listener_key(name)
    return scoped is not None and scoped[1] in SSL_STORE_KEYS


def connect(
    dynamic: DynamicBrokerConfigs,
    *,
    logs: LogManager,
    log_tasks: LogTasks,
    replicas: ReplicaManager,
    security: BrokerSecurity,
    cluster: object,
) -> None:
    """Make the broker's parts follow ``dynamic`` (see the module docstring)."""

    def log_check(effective: Mapping[str, str], changed: frozenset[str]) -> None:
        if not changed & (BROKER_CONFIG_NAMES.keys() | LOCAL_RETENTION_KEYS):
            return
        try:
            defaults = LogConfig.from_broker_configs(effective)
        except ValueError as exc:
            raise invalid_dynamic(str(exc)) from None
        problem = check_local_retention(
            defaults.local_retention_ms, defaults.retention_ms, "log.local.retention.ms", "log.retention.ms"
        ) or check_local_retention(
            defaults.local_retention_bytes,
            defaults.retention_bytes,
            "log.local.retention.bytes",
            "log.retention.bytes",
        )
        if problem is not None:
            raise invalid_dynamic(problem)

    def cleaner_check(effective: Mapping[str, str], changed: frozenset[str]) -> None:
        if not changed & CLEANER_KEYS:
            return
        threads = int(_getter(effective)("log.cleaner.threads"))
        current = log_tasks.cleaner_threads
        if threads < 1:
            raise invalid_dynamic("Log cleaner threads should be at least 1")
        if threads < current // 2:
            raise invalid_dynamic(
                f"Log cleaner threads cannot be reduced to less than half the current value {current}"
            )
        if threads > current * 2:
            raise invalid_dynamic(
                f"Log cleaner threads cannot be increased to more than double the current value {current}"
            )

    def thread_pool_check(effective: Mapping[str, str], changed: frozenset[str]) -> None:
        get = _getter(effective)
        for key in THREAD_POOL_KEYS:
            if key not in changed:
                continue
            try:
                new, old = int(get(key)), dynamic.int_value(key)
            except ValueError:  # a static value minikafka never parsed: nothing to compare with
                continue
            if new == old:
                continue
            problem = f"Dynamic thread count update validation failed for {key}={new}"
            if new <= 0:
                raise invalid_dynamic(f"{problem}, value should be at least 1")
            if new < old // 2:
                raise invalid_dynamic(f"{problem}, value should be at least half the current value {old}")
            if new > old * 2:
                raise invalid_dynamic(
                    f"{problem}, value should not be greater than double the current value {old}"
                )

    def tls_check(effective: Mapping[str, str], changed: frozenset[str]) -> None:
        if not any(_ssl_store_key(k) for k in changed):
            return
        try:
            security.reconfigure_tls(effective, validate_only=True)
        except ValueError as exc:
            raise invalid_dynamic(
                f"Validation of dynamic config update of SSLFactory failed: {exc}"
            ) from None

    dynamic.checks.extend((log_check, cleaner_check, thread_pool_check, tls_check))

    def apply(changed: frozenset[str]) -> None:
        explicit = dynamic.explicit()
        if changed & BROKER_CONFIG_NAMES.keys():
            logs.set_default_config(LogConfig.from_broker_configs(explicit))
        if changed & CLEANER_KEYS:
            log_tasks.reconfigure_cleaner(
                dynamic.int_value("log.cleaner.threads"),
                dynamic.int_value("log.cleaner.backoff.ms"),
                dynamic.int_value("log.cleaner.dedupe.buffer.size"),
            )
        if changed & {LEADER_RATE, FOLLOWER_RATE}:
            leader, follower = (
                dynamic.leader_replication_throttled_rate,
                dynamic.follower_replication_throttled_rate,
            )
            replicas.throttles.set_rates(
                None if leader >= LONG_MAX else leader, None if follower >= LONG_MAX else follower
            )
        if "producer.id.expiration.ms" in changed:
            replicas.producer_expiration_ms = dynamic.int_value("producer.id.expiration.ms")
        if "unclean.leader.election.enable" in changed and hasattr(cluster, "set_unclean_default"):
            unclean: UncleanDefault = cluster  # type: ignore[assignment]
            unclean.set_unclean_default(dynamic.bool_value("unclean.leader.election.enable"))
        if any(_ssl_store_key(k) for k in changed):
            security.reconfigure_tls(explicit)

    dynamic.on_change.append(apply)
