"""Replication throttles without a broker: the quota's rate and Kafka's throttled-replicas lists."""

from __future__ import annotations

from broker.replica.throttle import ALL, Quota, ReplicationThrottles, throttled_partitions


def test_a_quota_admits_its_rate_with_one_seconds_burst() -> None:
    quota = Quota(rate=1000.0)
    quota.record(0, now=100.0)
    assert not quota.exceeded(now=100.0)  # a full bucket: one second's worth
    quota.record(1500, now=100.0)  # a response is never cut short: the bucket goes below zero
    assert quota.exceeded(now=100.0) and quota.exceeded(now=100.4)
    assert not quota.exceeded(now=100.6)  # refilled at 1000 B/s
    # over a long copy the bytes admitted follow the rate
    sent, now = 0, 200.0
    while now < 260.0:
        if not quota.exceeded(now=now):
            quota.record(300, now=now)
            sent += 300
        now += 0.01
    assert 0.95 * 60_000 < sent < 1.05 * 60_000 + 1300
    assert not Quota().exceeded()  # no rate: never


def test_throttled_replicas_lists_name_partitions_per_broker() -> None:
    assert throttled_partitions("0:101,1:102, 2:101", 101) == frozenset({0, 2})
    assert throttled_partitions("0:101", 102) == frozenset()
    assert throttled_partitions("*", 7) is ALL
    assert throttled_partitions("", 7) == frozenset() and throttled_partitions(None, 7) == frozenset()
    assert throttled_partitions("x:1,3:y,4:1", 1) == frozenset({4})  # what does not parse is ignored


def test_only_listed_partitions_over_the_rate_are_throttled() -> None:
    throttles = ReplicationThrottles(1)
    configs = {"leader.replication.throttled.replicas": "0:1", "follower.replication.throttled.replicas": "*"}
    assert not throttles.leader_throttled(configs, 0)  # no rate set
    throttles.set_rates(10.0, 10.0)
    assert throttles.leader_counts(configs, 0) and not throttles.leader_counts(configs, 1)
    assert not throttles.leader_throttled(configs, 0)
    throttles.leader.record(1000)
    assert throttles.leader_throttled(configs, 0) and not throttles.leader_throttled(configs, 1)
    assert throttles.follower_counts(configs, 5) and not throttles.follower_throttled(configs, 5)
    throttles.follower.record(1000)
    assert throttles.follower_throttled(configs, 5)
    throttles.set_rates(None, None)
    assert not throttles.leader_throttled(configs, 0) and not throttles.follower_throttled(configs, 5)
