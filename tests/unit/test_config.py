from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError, parse_properties


def test_precedence_file_env_flags(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("# comment\nnum.partitions=3\nlog.retention.ms = 1000\nport: 9999\n")
    cfg = BrokerConfig.load(
        f, env={"MINIKAFKA_LOG_RETENTION_MS": "2000"}, overrides={"port": 1234, "host": None}
    )
    assert cfg["num.partitions"] == 3 and cfg.sources["num.partitions"] == str(f)
    assert cfg["log.retention.ms"] == 2000 and cfg.sources["log.retention.ms"].startswith("env")
    assert cfg["port"] == 1234 and cfg.sources["port"] == "command line"
    assert cfg["host"] == "127.0.0.1" and cfg.sources["host"] == "default"
    assert "num.partitions" in cfg.describe()


def test_listeners_key(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text("listeners=PLAINTEXT://127.0.0.2:19092\n")
    cfg = BrokerConfig.load(f)
    assert (cfg["host"], cfg["port"]) == ("127.0.0.2", 19092)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no.such.key=1\n", "unknown configuration key 'no.such.key'"),
        ("num.partitions=abc\n", "invalid value 'abc' for 'num.partitions'"),
        ("auto.create.topics.enable=maybe\n", "auto.create.topics.enable"),
        ("just a line\n", "unknown configuration key 'just'"),
        ("log.retention.msec=5\n", "did you mean log.retention.ms?"),
        ("listeners=nonsense\n", "expected NAME://host:port"),
        ("listeners=FOO://:9093\n", "security protocol 'FOO'"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "p"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        BrokerConfig.load(f)


def test_rack_and_replica_selector(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text(
        "broker.rack=eu-1a\nreplica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector\n"
    )
    cfg = BrokerConfig.load(f)
    assert cfg["broker.rack"] == "eu-1a" and "broker.rack" not in cfg.ignored
    assert cfg["replica.selector.class"].endswith(".RackAwareReplicaSelector")
    assert (BrokerConfig.load()["broker.rack"], BrokerConfig.load()["replica.selector.class"]) == ("", "")
    f.write_text("replica.selector.class=com.example.MySelector\n")
    with pytest.raises(ConfigError, match="replica.selector.class"):
        BrokerConfig.load(f)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        BrokerConfig.load("/nonexistent/server.properties")


def test_parse_properties_separators() -> None:
    assert parse_properties("a=1\nb: 2\n! c\nd = x=y\n") == {"a": "1", "b": "2", "d": "x=y"}


def test_parse_properties_java_syntax() -> None:
    text = (
        "  # indented comment\n"
        "key value with spaces\n"
        "long = first,\\\n"
        "       second\n"
        "esc\\:aped\\=key = a\\tb\\u0041\\\\\n"
        "empty\n"
        "odd=ends in two \\\\\n"
        "next=1\n"
    )
    assert parse_properties(text) == {
        "key": "value with spaces",
        "long": "first,second",
        "esc:aped=key": "a\tbA\\",
        "empty": "",
        "odd": "ends in two \\",
        "next": "1",
    }


def test_kafka_keys_are_ignored_and_reported(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text(
        "num.network.threads=3\nprocess.roles=broker,controller\nlistener.name.sasl_ssl.plain.sasl.jaas.config=x\n"
    )
    cfg = BrokerConfig.load(f)
    assert set(cfg.ignored) == {
        "num.network.threads",
        "process.roles",
        "listener.name.sasl_ssl.plain.sasl.jaas.config",
    }
    assert "process.roles" in cfg.describe() and "minikafka ignores" in cfg.describe()


def test_listeners_skip_controller_listeners_and_map_advertised(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text(
        "listeners=CONTROLLER://:9093,PLAINTEXT://:9092\n"
        "advertised.listeners=PLAINTEXT://broker.example:19092,CONTROLLER://localhost:9093\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
        "log.dir=/var/lib/k\n"
    )
    cfg = BrokerConfig.load(f)
    assert (cfg["host"], cfg["port"]) == ("0.0.0.0", 9092)
    assert (cfg.advertised_host, cfg["advertised.port"]) == ("broker.example", 19092)
    assert str(cfg.data_dir) == "/var/lib/k"
    cli = BrokerConfig.load(f, overrides={"host": "127.0.0.1", "port": 1234})
    assert (cli["host"], cli["port"]) == ("127.0.0.1", 1234)  # flags win over the file


def test_renamed_listener_resolved_through_the_protocol_map(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text("listeners=INTERNAL://127.0.0.5:9000\nlistener.security.protocol.map=INTERNAL:PLAINTEXT\n")
    cfg = BrokerConfig.load(f)
    assert (cfg["host"], cfg["port"]) == ("127.0.0.5", 9000)


def test_retention_units_follow_kafka_precedence(tmp_path: Path) -> None:
    from broker.broker import log_defaults

    f = tmp_path / "p"
    f.write_text("log.retention.hours=2\nlog.roll.hours=1\n")
    cfg = log_defaults(BrokerConfig.load(f))
    assert cfg.retention_ms == 2 * 3600_000 and cfg.segment_ms == 3600_000
    f.write_text("log.retention.hours=2\nlog.retention.minutes=5\n")
    assert log_defaults(BrokerConfig.load(f)).retention_ms == 5 * 60_000
    f.write_text("log.retention.ms=1234\nlog.retention.hours=2\n")
    assert log_defaults(BrokerConfig.load(f)).retention_ms == 1234


def test_advertised_listeners(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text(
        "listeners=PLAINTEXT://127.0.0.1:19092\nadvertised.listeners=PLAINTEXT://kafka.example:9093,X://y:1\n"
    )
    cfg = BrokerConfig.load(f)
    assert (cfg["host"], cfg["port"], cfg.advertised_host, cfg["advertised.port"]) == (
        "127.0.0.1",
        19092,
        "kafka.example",
        9093,
    )


def test_unknown_topic_config_suggests_the_closest_name() -> None:
    from storage.config import LogConfig

    with pytest.raises(
        ValueError, match=r"unknown topic config 'retention\.msec'; did you mean retention\.ms\?"
    ):
        LogConfig.from_topic_configs({"retention.msec": "1"})
    assert LogConfig.from_topic_configs({"compression.zstd.level": "3"}).extra == {
        "compression.zstd.level": "3"
    }


def test_every_client_listener_is_served_with_its_protocol_and_advertised_address(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text(
        "listeners=INTERNAL://0.0.0.0:19092,EXTERNAL://:9093,CONTROLLER://:9094,SECURE://:9095\n"
        "advertised.listeners=INTERNAL://broker-2:19092,EXTERNAL://localhost:9093\n"
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SSL\n"
        "controller.listener.names=CONTROLLER\n"
        "inter.broker.listener.name=internal\n"
    )
    cfg = BrokerConfig.load(f)
    assert [
        (s.name, s.host, s.port, s.advertised_host, s.advertised_port, s.protocol)
        for s in cfg.served_listeners()
    ] == [
        ("INTERNAL", "0.0.0.0", 19092, "broker-2", 19092, "PLAINTEXT"),
        ("EXTERNAL", "0.0.0.0", 9093, "localhost", 9093, "PLAINTEXT"),
        ("SECURE", "0.0.0.0", 9095, "0.0.0.0", 0, "SSL"),
    ]
    assert cfg.inter_broker_listener == "INTERNAL"
    flags = BrokerConfig.load(f, overrides={"port": 0, "advertised.host": "b2"})
    assert [(s.port, s.advertised_host) for s in flags.served_listeners()] == [
        (0, "b2"),
        (9093, "localhost"),
        (9095, "0.0.0.0"),
    ]


def test_listener_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    f = tmp_path / "p"
    f.write_text("listeners=A://:1,B://:2\nlistener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT\n")
    assert BrokerConfig.load(f).inter_broker_listener == "A"  # the first by default
    f.write_text(f.read_text() + "inter.broker.listener.name=C\n")
    with pytest.raises(ConfigError, match=r"^inter.broker.listener.name C is not a served listener \(A, B; "):
        BrokerConfig.load(f)
    f.write_text("listeners=PLAINTEXT://:1,PLAINTEXT://:2\n")
    with pytest.raises(ConfigError, match="each listener needs a name of its own"):
        BrokerConfig.load(f)
    with pytest.raises(ConfigError, match="not a served listener"):
        BrokerConfig.load(env={"MINIKAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL"})
