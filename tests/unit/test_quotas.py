"""Client quotas without a broker process: Kafka's windowed rate and throttle time, the precedence of
quota entities and their defaults, the admin APIs' checks, storage names, and the manager's
enforcement (broker/security/quota_*.py, broker/security/quotas.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.security.broker_security import BrokerSecurity
from broker.security.quota_config import (
    DEFAULT,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    QuotaError,
    QuotaTable,
    check_entity,
    check_ops,
    format_value,
    matches,
    parse_filter,
)
from broker.security.quota_rate import SampledRate, TokenBucket, record_and_throttle, throttle_time_ms
from broker.security.quota_store import desanitize, entity_path, parse_entity_path, sanitize
from broker.security.quotas import ClientQuotas
from protocol.errors import ErrorCode

T = 1000.0  # a quota of 1000 bytes/s


# -- the rate (Kafka's Rate over a WindowedSum) ------------------------------------------------
def test_a_new_rate_is_measured_over_samples_minus_one_windows() -> None:
    rate = SampledRate(11, 1000)
    rate.record(5000, 0)
    assert rate.window_ms(0) == 10_000  # 10 whole windows assumed, not the 0 ms elapsed
    assert rate.measure(0) == 500.0
    assert rate.window_ms(2500) == 2500 + 8000  # 2 whole windows elapsed: 8 more assumed
    assert rate.window_ms(10_500) == 10_500  # enough history: the time since the oldest sample


def test_samples_expire_after_the_whole_window() -> None:
    rate = SampledRate(3, 1000)
    rate.record(3000, 0)
    assert rate.measure(2999) == pytest.approx(3000 / 2.999)  # two whole windows: no more assumed
    assert rate.measure(3000) == 0.0  # the only sample is samples * window old
    rate.record(100, 3000)
    assert rate.measure(3000) == 50.0  # a fresh start: 100 over two assumed windows


def test_the_rate_keeps_samples_plus_one_and_recycles_them() -> None:
    rate = SampledRate(2, 1000)
    for second in range(6):
        rate.record(1000, second * 1000)
    assert len(rate._list) == 3  # samples + 1: one overlapping the window's start
    # at 5.5 s the sample of 3 s is two windows old: the 4 s and 5 s ones remain, 2000 over 1.5 s
    assert rate.measure(5500) == pytest.approx(2000 / 1.5)


def test_throttle_time_is_kafkas_formula() -> None:
    # O * W / (W + X) = T  =>  X = (O - T) / T * W
    assert throttle_time_ms(2000.0, T, 10_000) == 10_000
    assert throttle_time_ms(1100.0, T, 10_000) == 1000
    assert throttle_time_ms(1088.0, 1024.0, 8) == 1  # 0.5 ms rounds up, as Java's Math.round
    assert throttle_time_ms(1000.0, T, 10_000) == 0
    assert throttle_time_ms(10.0, T, 10_000) == 0


def test_a_client_may_burst_the_window_then_is_throttled_to_its_quota() -> None:
    rate = SampledRate(11, 1000)
    assert record_and_throttle(rate, 10_000, T, 0) == 0  # 10000 over 10 s: exactly the quota
    ms = record_and_throttle(rate, 1000, T, 0)
    assert ms == 1000  # 11000 over 10 s: 10% over, so 10% of the window
    assert record_and_throttle(rate, 10_000, T, 0, max_ms=700) == 700  # request quotas cap it


def test_a_throttled_client_averages_its_quota() -> None:
    """A client that sends whenever it is not muted gets the quota, within a few percent."""
    rate = SampledRate(2, 1000)
    now = sent = 0
    while now < 60_000:
        sent += 50_000
        now += 1 + record_and_throttle(rate, 50_000, 100_000.0, now)
    assert sent / (now / 1000) == pytest.approx(100_000, rel=0.06)


# -- precedence and defaults ---------------------------------------------------------------------
ALL_LEVELS = {
    ("alice", "app"): 1.0,
    ("alice", DEFAULT): 2.0,
    ("alice", None): 3.0,
    (DEFAULT, "app"): 4.0,
    (DEFAULT, DEFAULT): 5.0,
    (DEFAULT, None): 6.0,
    (None, "app"): 7.0,
    (None, DEFAULT): 8.0,
}


def _bound(table: QuotaTable, user: str, client: str) -> float | None:
    return table.bound("producer_byte_rate", table.tags("producer_byte_rate", user, client))


def test_precedence_is_kafkas_eight_levels() -> None:
    entries = dict(ALL_LEVELS)
    for expected in range(1, 9):
        table = QuotaTable({e: {"producer_byte_rate": v} for e, v in entries.items()})
        assert _bound(table, "alice", "app") == expected
        del entries[next(e for e, v in entries.items() if v == expected)]
    assert _bound(QuotaTable({}), "alice", "app") is None


def test_defaults_apply_to_every_user_and_client_id() -> None:
    table = QuotaTable(
        {(DEFAULT, None): {"producer_byte_rate": 10.0}, ("bob", None): {"producer_byte_rate": 20.0}}
    )
    assert _bound(table, "ANONYMOUS", "x") == 10.0
    assert _bound(table, "bob", "x") == 20.0
    # each user is its own quota entity: they do not share one rate
    assert table.tags("producer_byte_rate", "carol", "x") == ("carol", "")
    table = QuotaTable({(None, DEFAULT): {"consumer_byte_rate": 5.0}})
    assert table.bound("consumer_byte_rate", table.tags("consumer_byte_rate", "u", "c1")) == 5.0
    assert table.tags("consumer_byte_rate", "u", "c1") == ("", "c1")  # every user of c1 shares it


def test_quota_entities_follow_the_levels_that_have_entries() -> None:
    table = QuotaTable({("alice", "app"): {"producer_byte_rate": 1.0}})
    assert table.tags("producer_byte_rate", "alice", "app") == ("alice", "app")
    assert _bound(table, "alice", "other") is None
    mixed = QuotaTable(
        {("alice", None): {"producer_byte_rate": 3.0}, (None, "app"): {"producer_byte_rate": 7.0}}
    )
    assert mixed.tags("producer_byte_rate", "alice", "app") == ("alice", "")
    assert mixed.tags("producer_byte_rate", "bob", "app") == ("", "app")
    assert _bound(mixed, "bob", "app") == 7.0


def test_each_key_resolves_on_its_own() -> None:
    table = QuotaTable(
        {("alice", None): {"consumer_byte_rate": 1.0}, (None, "app"): {"producer_byte_rate": 2.0}}
    )
    assert _bound(table, "alice", "app") == 2.0  # alice's entry has no producer_byte_rate
    assert table.has("consumer_byte_rate") and not table.has("request_percentage")


# -- AlterClientQuotas / DescribeClientQuotas checks ---------------------------------------------
def _refused(fn: Any, *args: Any) -> tuple[int, str]:
    with pytest.raises(QuotaError) as info:
        fn(*args)
    return info.value.code, info.value.message


def test_entity_checks() -> None:
    assert check_entity([("user", "alice")]) == ("alice", None)
    assert check_entity([("client-id", None), ("user", "bob")]) == ("bob", DEFAULT)
    bad = ErrorCode.INVALID_REQUEST
    assert _refused(check_entity, []) == (bad, "Invalid empty client quota entity")
    assert _refused(check_entity, [("group", "g")]) == (bad, "Unhandled client quota entity type: group")
    assert _refused(check_entity, [("user", "")]) == (bad, "Empty user not supported")
    assert _refused(check_entity, [("user", "a"), ("user", "b")])[1].endswith("duplicate entity entry user")
    assert _refused(check_entity, [("ip", "1.2.3.4"), ("user", "a")])[0] == bad


def test_op_checks() -> None:
    e = ("alice", None)
    assert check_ops([("producer_byte_rate", 1024.0, False), ("request_percentage", 0.0, True)], e) == {
        "producer_byte_rate": 1024.0,
        "request_percentage": None,
    }
    assert check_ops([("controller_mutation_rate", 0.5, False)], e) == {"controller_mutation_rate": 0.5}
    assert check_ops([("bogus", 0.0, True)], e) == {"bogus": None}  # removing anything is fine
    assert _refused(check_ops, [("bogus", 1.0, False)], e)[1] == "Invalid configuration key bogus"
    assert _refused(check_ops, [("consumer_byte_rate", 0.0, False)], e)[1] == (
        "Quota consumer_byte_rate must be greater than 0"
    )
    assert _refused(check_ops, [("producer_byte_rate", 1.5, False)], e)[1] == (
        "producer_byte_rate cannot be a fractional value."
    )
    assert _refused(check_ops, [("producer_byte_rate", 1e19, False)], e)[1].endswith("too large for a LONG.")
    message = _refused(
        check_ops, [("producer_byte_rate", 1.0, False), ("producer_byte_rate", 2.0, False)], e
    )[1]
    assert message == (
        "Duplicate quota key producer_byte_rate not updating quota for this entity "
        "ClientQuotaEntity(entries={user=alice})"
    )


def test_filters_match_exact_default_and_any() -> None:
    entities = [("alice", None), (DEFAULT, None), ("alice", "app"), (None, "app"), (None, DEFAULT)]

    def picked(components: list[tuple[str, int, str | None]], strict: bool = False) -> list[Any]:
        flt = parse_filter(components, strict)
        return [e for e in entities if matches(e, flt)]

    assert picked([]) == entities
    assert picked([], strict=True) == []
    assert picked([("user", MATCH_EXACT, "alice")]) == [("alice", None), ("alice", "app")]
    assert picked([("user", MATCH_EXACT, "alice")], strict=True) == [("alice", None)]
    assert picked([("user", MATCH_DEFAULT, None)]) == [(DEFAULT, None)]
    assert picked([("user", MATCH_SPECIFIED, None)], strict=True) == [("alice", None), (DEFAULT, None)]
    assert picked([("client-id", MATCH_SPECIFIED, None)]) == [
        ("alice", "app"),
        (None, "app"),
        (None, DEFAULT),
    ]
    assert picked([("user", MATCH_SPECIFIED, None), ("client-id", MATCH_EXACT, "app")]) == [("alice", "app")]


def test_filter_checks() -> None:
    bad = ErrorCode.INVALID_REQUEST
    assert _refused(parse_filter, [("", 0, "x")], False) == (bad, "Invalid empty entity type.")
    assert _refused(parse_filter, [("user", 0, None)], False)[1] == (
        "Request specified MATCH_TYPE_EXACT, but set match string to null."
    )
    assert _refused(parse_filter, [("user", 1, "a")], False)[0] == bad
    assert _refused(parse_filter, [("user", 2, "a")], False)[0] == bad
    assert _refused(parse_filter, [("user", 7, None)], False)[1] == "Unknown match type 7"
    assert _refused(parse_filter, [("user", 2, None), ("user", 1, None)], False)[1] == (
        "Entity type user cannot appear more than once in the filter."
    )
    assert _refused(parse_filter, [("group", 2, None)], False) == (
        ErrorCode.UNSUPPORTED_VERSION,
        "Unsupported entity type group",
    )
    assert _refused(parse_filter, [("ip", 2, None), ("user", 2, None)], False)[0] == bad


# -- storage names -------------------------------------------------------------------------------
def test_names_are_sanitized_as_kafka_does() -> None:
    assert sanitize("alice") == "alice"
    assert sanitize("CN=a b,O=x*y~z/é") == "CN%3Da%20b%2CO%3Dx%2Ay%7Ez%2F%C3%A9"
    assert sanitize(DEFAULT) == DEFAULT
    assert desanitize("a+b%2Fc") == "a b/c"
    for entity in [("a/b", None), (None, "c d"), (DEFAULT, "x"), ("u", DEFAULT)]:
        assert parse_entity_path(entity_path(entity)) == entity
    assert entity_path(("u", "c")) == "users/u/clients/c"
    assert parse_entity_path("brokers/1") is None
    assert format_value("producer_byte_rate", 1024.0) == "1024"
    assert format_value("request_percentage", 200) == "200.0"


# -- the manager ---------------------------------------------------------------------------------
def _quotas(tmp_path: Path, **overrides: Any) -> ClientQuotas:
    config = BrokerConfig.load(overrides={"log.dirs": str(tmp_path), **overrides})
    return BrokerSecurity(config, tmp_path).quotas


def _ctx(client_id: str = "A", principal: str = "User:alice", api_key: int = 0, version: int = 9) -> Any:
    session = SimpleNamespace(principal=principal, throttle_ms=0)
    return SimpleNamespace(
        header=SimpleNamespace(client_id=client_id, api_key=api_key), session=session, version=version
    )


def _produce(sizes: list[int], acks: int = 1) -> Any:
    parts = [SimpleNamespace(records=b"x" * n) for n in sizes]
    return SimpleNamespace(acks=acks, topic_data=[SimpleNamespace(partition_data=parts)])


def test_alterations_are_durable_beside_scram_credentials(tmp_path: Path) -> None:
    users_file = tmp_path / "__minikafka_scram_credentials.json"
    users_file.write_text(json.dumps({"version": 1, "users": {"alice": {"SCRAM-SHA-512": "kept"}}}))
    quotas = _quotas(tmp_path)
    assert not quotas.enabled
    changes: dict[Any, dict[str, float | None]] = {
        ("alice", None): {"producer_byte_rate": 2048.0},
        ("a b", "app"): {"request_percentage": 50.0},
        (None, DEFAULT): {"consumer_byte_rate": 10.0},
    }
    asyncio.run(quotas.alter(changes))
    assert quotas.enabled
    users = json.loads(users_file.read_text())["users"]
    assert users == {"alice": {"SCRAM-SHA-512": "kept", "producer_byte_rate": "2048"}}
    entities = json.loads((tmp_path / "__minikafka_client_quotas.json").read_text())["entities"]
    assert entities == {
        "clients/<default>": {"consumer_byte_rate": "10"},
        "users/a%20b/clients/app": {"request_percentage": "50.0"},
    }
    again = _quotas(tmp_path)  # a restarted broker reads them back
    assert again.quotas == {
        ("alice", None): {"producer_byte_rate": 2048.0},
        ("a b", "app"): {"request_percentage": 50.0},
        (None, DEFAULT): {"consumer_byte_rate": 10.0},
    }
    asyncio.run(again.alter({("alice", None): {"producer_byte_rate": None}}))
    assert json.loads(users_file.read_text())["users"] == {"alice": {"SCRAM-SHA-512": "kept"}}
    assert ("alice", None) not in again.quotas


def test_produce_over_the_quota_throttles_the_session(tmp_path: Path) -> None:
    quotas = _quotas(tmp_path, **{"quota.window.num": 2})
    asyncio.run(quotas.alter({(None, "A"): {"producer_byte_rate": 1000.0}}))
    ctx = _ctx()
    assert quotas.record_produce(ctx, _produce([400, 500])) == 0  # 900 over 1 s
    ms = quotas.record_produce(ctx, _produce([1100]))
    assert 900 <= ms <= 1000 and ctx.session.throttle_ms == ms  # 2000 over ~1 s: twice the quota
    other = _ctx(client_id="B")
    assert quotas.record_produce(other, _produce([10**6])) == 0 and other.session.throttle_ms == 0


def test_a_throttled_fetch_answers_no_records(tmp_path: Path) -> None:
    quotas = _quotas(tmp_path, **{"quota.window.num": 2})
    asyncio.run(quotas.alter({("alice", None): {"consumer_byte_rate": 1000.0}}))
    req = SimpleNamespace(replica_id=-1)

    def answer(n: int) -> dict[str, Any]:
        part = {"partition_index": 0, "error_code": 0, "high_watermark": 5, "records": b"r" * n}
        return {"throttle_time_ms": 0, "responses": [{"topic": "t", "partitions": [part]}]}

    ctx = _ctx(api_key=1)
    first = answer(800)
    quotas.record_fetch(ctx, req, first)
    assert first["throttle_time_ms"] == 0 and len(first["responses"][0]["partitions"][0]["records"]) == 800
    second = answer(800)
    quotas.record_fetch(ctx, req, second)
    part = second["responses"][0]["partitions"][0]
    assert second["throttle_time_ms"] > 0 and part["records"] == b"" and part["high_watermark"] == 5
    third = answer(150)  # the throttled 800 bytes were taken back out: 950 fits
    quotas.record_fetch(ctx, req, third)
    assert third["throttle_time_ms"] == 0
    follower = answer(10**6)
    quotas.record_fetch(ctx, SimpleNamespace(replica_id=1), follower)
    assert follower["throttle_time_ms"] == 0  # replication is exempt


def test_request_percentage_counts_handler_time(tmp_path: Path) -> None:
    quotas = _quotas(tmp_path, **{"quota.window.num": 2})
    asyncio.run(quotas.alter({(DEFAULT, None): {"request_percentage": 0.01}}))
    ctx = _ctx(api_key=3, version=12)
    response = {"throttle_time_ms": 0, "brokers": []}
    started = __import__("time").perf_counter() - 0.005  # a 5 ms handler: 0.5 percent-seconds
    assert quotas.after_request(ctx, SimpleNamespace(), response, started) is response
    assert 0 < response["throttle_time_ms"] <= 1000  # capped at one window
    assert ctx.session.throttle_ms == response["throttle_time_ms"]
    exempt = _ctx(api_key=0)
    unanswered = quotas.after_request(exempt, SimpleNamespace(acks=0), None, started)
    assert unanswered is None and exempt.session.throttle_ms == 0  # acks=0 is exempt

    async def pending() -> dict[str, Any]:
        return {"throttle_time_ms": 0}

    later = _ctx(api_key=3)
    done = asyncio.run(quotas.after_request(later, SimpleNamespace(), pending(), started))
    assert done["throttle_time_ms"] > 0


def test_nothing_is_measured_without_quotas(tmp_path: Path) -> None:
    quotas = _quotas(tmp_path)
    asyncio.run(quotas.alter({("alice", None): {"controller_mutation_rate": 5.0}}))
    assert not quotas.enabled  # controller_mutation_rate alone is stored, not enforced


def test_token_bucket_starts_full_goes_below_zero_and_refills() -> None:
    """controller_mutation_rate 2/s with 11 windows of 1 s: a burst of 22 partitions."""
    bucket, rate, burst = TokenBucket(), 2.0, 22.0
    assert bucket.throttle_ms(rate, burst, 1_000) == 0 and bucket.is_full(1_000)
    bucket.take(30, rate, burst, 1_000)  # one mutation may overdraw
    assert bucket.throttle_ms(rate, burst, 1_000) == 4_000  # 8 below zero at 2 per second
    assert bucket.throttle_ms(rate, burst, 3_000) == 2_000
    assert bucket.throttle_ms(rate, burst, 5_000) == 0 and not bucket.is_full(5_000)
    assert bucket.is_full(16_000)  # 22 more credits at 2/s after reaching zero
    bucket.take(1, rate, burst, 100_000)
    assert bucket.credits == 21  # refilled only up to the burst
