"""The security suite: TLS beside plaintext, and what the authorizer costs, same run, same machine.

- TLS: kcat (librdkafka) produces ``RECORDS`` (2M of 100 B, 500k of 1 KB) to one
  broker over its PLAINTEXT listener and over its SASL_SSL listener
  (SCRAM-SHA-512), then consumes them back to the end, records/s each, and
  records per second of broker CPU (what TLS costs the broker itself: on a
  two-core machine kcat's own encryption competes for the same cores).
  Goal (issue 19): SASL_SSL >= 0.6 of PLAINTEXT.
- ACLs: confluent-kafka produces 100 B records with linger.ms=0 (many small
  Produce requests, so the per-request check shows) over SASL_PLAINTEXT to two
  brokers: one without an authorizer, one with ``authorizer.class.name`` and
  10,000 ACLs (the user's own WRITE and DESCRIBE on its topic among them).
  Goal: the authorized broker >= 0.95 of the other.

Each figure is the best of ``ROUNDS`` (TLS) or ``ACL_ROUNDS`` rounds, the sides alternating.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.security.acl_store import LocalAclStore
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tests.broker_process import BrokerProcess, free_port
from tests.compat.security_broker import create_scram_users
from tests.support.certs import make_tls_files

RECORDS = {100: 2_000_000, 1000: 500_000}
ACL_RECORDS = 2_000_000
ROUNDS = 3
ACL_ROUNDS = 5
ACLS = 10_000
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required"
    ' user_bench="bench-secret" user_admin="admin-secret";'
)


def _topic(bootstrap: str, name: str, conf: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **(conf or {})})
    admin.create_topics([NewTopic(name, 4, 1)])[name].result(30)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kcat_rate(kcat: str, flags: list[str], topic: str, size: int, pid: int) -> list[tuple[float, float]]:
    """[(records/s, records per broker CPU second)] of kcat producing, then consuming, ``RECORDS[size]``
    records of ``size`` bytes to the broker process ``pid``."""
    records = RECORDS[size]
    data = (b"x" * (size - 1) + b"\n") * records
    cpu, start = _cpu_s(pid), time.perf_counter()
    subprocess.run(
        [kcat, *flags, "-P", "-t", topic, "-X", "linger.ms=5"], input=data, check=True, timeout=300
    )
    out = [(records / (time.perf_counter() - start), records / max(_cpu_s(pid) - cpu, 1e-3))]
    cpu, start = _cpu_s(pid), time.perf_counter()
    read = subprocess.run(
        [kcat, *flags, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p\n"],
        capture_output=True,
        check=True,
        timeout=300,
    )
    n = read.stdout.count(b"\n")
    out.append((n / (time.perf_counter() - start), n / max(_cpu_s(pid) - cpu, 1e-3)))
    return out


def tls_suite(root: Path) -> list[tuple[str, float, float]]:
    kcat = shutil.which("kcat")
    if kcat is None:
        print("kcat not installed: TLS figures skipped")
        return []
    tls = make_tls_files(root / "tls")
    secure = free_port()
    config = root / "tls.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:{secure}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL\n"
        f"ssl.keystore.location={tls.keystore}\nssl.truststore.location={tls.truststore}\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-512\n"
    )
    broker = BrokerProcess(root / "tls-data", extra=["--config", str(config)]).start()
    rows = []
    try:
        create_scram_users(broker.bootstrap, {"bench": ("SCRAM-SHA-512", "bench-secret")})
        plain = ["-b", broker.bootstrap]
        sasl_ssl = [
            "-b", f"127.0.0.1:{secure}",
            "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
            "-X", "sasl.username=bench", "-X", "sasl.password=bench-secret",
            "-X", f"ssl.ca.location={tls.ca}",
        ]  # fmt: skip
        assert broker.proc is not None
        pid = broker.proc.pid
        for size in (100, 1000):
            # [produce, consume] x [records/s, records per broker CPU second], best of the rounds
            best = {name: [[0.0, 0.0], [0.0, 0.0]] for name in ("plain", "tls")}
            for r in range(ROUNDS):
                order = [("plain", plain), ("tls", sasl_ssl)]
                for name, flags in order if r % 2 == 0 else order[::-1]:
                    topic = f"bench-{name}-{size}-{r}"
                    _topic(broker.bootstrap, topic)
                    for i, figures in enumerate(_kcat_rate(kcat, flags, topic, size, pid)):
                        best[name][i] = [max(a, b) for a, b in zip(best[name][i], figures, strict=True)]
            for i, what in enumerate(("produce", "consume")):
                rows.append((f"kcat {what} {size} B", best["plain"][i][0], best["tls"][i][0]))
                rows.append(("  per broker CPU second", best["plain"][i][1], best["tls"][i][1]))
    finally:
        broker.stop()
    return rows


def _acls(principal: str, topic: str) -> list[AclBinding]:
    """10,000 ACLs: other users' literal and prefixed topic ACLs, plus ``principal``'s own."""
    out = []
    for i in range(ACLS - 2):
        kind = PatternType.PREFIXED if i % 4 == 0 else PatternType.LITERAL
        out.append(
            AclBinding(
                ResourcePattern(ResourceType.TOPIC, f"team-{i % 500}-topic-{i}", kind),
                AccessControlEntry(f"User:user-{i % 700}", "*", AclOperation.WRITE, AclPermissionType.ALLOW),
            )
        )
    for op in (AclOperation.WRITE, AclOperation.DESCRIBE):
        out.append(
            AclBinding(
                ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
            )
        )
    return out


def _produce_rate(conf: dict[str, str], topic: str) -> float:
    p = Producer({**conf, "linger.ms": 0, "acks": 1, "enable.idempotence": False})
    value = b"v" * 100
    start = time.perf_counter()
    for _ in range(ACL_RECORDS):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)
    return ACL_RECORDS / (time.perf_counter() - start)


def acl_suite(root: Path) -> list[tuple[str, float, float]]:
    topic = "bench-acl"
    brokers = {}
    for name, authorizer in (("open", False), ("acls", True)):
        port = free_port()
        config = root / f"{name}.properties"
        lines = [
            f"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms=PLAIN",
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}",
        ]
        data = root / f"{name}-data"
        if authorizer:
            lines += [
                "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
                "super.users=User:ANONYMOUS",
            ]
            data.mkdir(parents=True)
            LocalAclStore(data / "__minikafka_acls.json").save(_acls("User:bench", topic))
        config.write_text("\n".join(lines) + "\n")
        brokers[name] = (BrokerProcess(data, extra=["--config", str(config)]).start(), port)
    try:
        confs = {}
        for name, (broker, port) in brokers.items():
            _topic(broker.bootstrap, topic)
            confs[name] = {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "bench",
                "sasl.password": "bench-secret",
            }
        best = {"open": 0.0, "acls": 0.0}
        for r in range(ACL_ROUNDS):
            for name in ("open", "acls") if r % 2 == 0 else ("acls", "open"):
                best[name] = max(best[name], _produce_rate(confs[name], topic))
    finally:
        for broker, _ in brokers.values():
            broker.stop()
    return [("produce 100 B, linger 0 (requests)", best["open"], best["acls"])]


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        root = Path(tmp)
        rows = tls_suite(root)
        print(f"{'TLS (kcat, records/s)':<34} {'PLAINTEXT':>12} {'SASL_SSL':>12} {'ratio':>7}")
        for name, plain, tls in rows:
            print(f"{name:<34} {plain:>12,.0f} {tls:>12,.0f} {tls / plain:>7.2f}")
        acl_rows = acl_suite(root)
        print(f"\n{'ACLs (confluent-kafka, records/s)':<34} {'no authz':>12} {'10k ACLs':>12} {'ratio':>7}")
        for name, open_rate, acl_rate in acl_rows:
            print(f"{name:<34} {open_rate:>12,.0f} {acl_rate:>12,.0f} {acl_rate / open_rate:>7.2f}")
        if rows:
            worst = min(tls / plain for name, plain, tls in rows if name.startswith("kcat"))
            print(
                f"\ngoal TLS >= 0.6 of plaintext: worst {worst:.2f} -> {'met' if worst >= 0.6 else 'NOT met'}"
            )
        ratio = acl_rows[0][2] / acl_rows[0][1]
        print(f"goal ACL check <= 5% of produce: {1 - ratio:+.1%} -> {'met' if ratio >= 0.95 else 'NOT met'}")


if __name__ == "__main__":
    run()
