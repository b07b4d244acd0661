"""A broker subprocess with every kind of listener, for the security tests.

Listeners: PLAINTEXT (the admin's way in, ``User:ANONYMOUS``), SASL_SSL
(SCRAM-SHA-256 and SCRAM-SHA-512), SASL_PLAINTEXT (PLAIN, users from the
JAAS config) and SSL with client certificates required (mTLS). Certificates
are made at test time (tests/support/certs.py). SCRAM users are created through
the PLAINTEXT listener with confluent-kafka's AdminClient, so the credential
API is exercised by a client we did not write.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.broker_process import BrokerProcess, free_port
from tests.support.certs import ClientCert, TlsFiles, make_client_cert, make_tls_files

USERS = {"bob": ("SCRAM-SHA-512", "bob-secret"), "carol": ("SCRAM-SHA-256", "carol-secret")}
PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}


@dataclass
class SecureBroker:
    proc: BrokerProcess
    tls: TlsFiles
    client_cert: ClientCert  # CN=alice,OU=eng,O=acme, trusted
    untrusted_cert: ClientCert  # signed by a CA the broker does not trust
    plaintext: int
    sasl_ssl: int
    sasl_plaintext: int
    ssl: int

    def client_context(self, cert: ClientCert | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.tls.ca))
        if cert is not None:
            ctx.load_cert_chain(str(cert.cert), str(cert.key))
        return ctx

    def confluent(self, kind: str, user: str | None = None, password: str | None = None) -> dict[str, Any]:
        """librdkafka settings for listener ``kind``: scram512, scram256, plain, mtls."""
        ca = str(self.tls.ca)
        if kind in ("scram512", "scram256"):
            name = user or ("bob" if kind == "scram512" else "carol")
            mechanism = "SCRAM-SHA-512" if kind == "scram512" else "SCRAM-SHA-256"
            return {
                "bootstrap.servers": f"127.0.0.1:{self.sasl_ssl}",
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": mechanism,
                "sasl.username": name,
                "sasl.password": password or USERS[name][1],
                "ssl.ca.location": ca,
            }
        if kind == "plain":
            name = user or "alice"
            return {
                "bootstrap.servers": f"127.0.0.1:{self.sasl_plaintext}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": name,
                "sasl.password": password or PLAIN_USERS[name],
            }
        assert kind == "mtls"
        return {
            "bootstrap.servers": f"127.0.0.1:{self.ssl}",
            "security.protocol": "SSL",
            "ssl.ca.location": ca,
            "ssl.certificate.location": str(self.client_cert.cert),
            "ssl.key.location": str(self.client_cert.key),
        }


def write_config(root: Path, tls: TlsFiles, ports: tuple[int, int, int], extra: str = "") -> Path:
    sasl_ssl, sasl_plaintext, mtls = ports
    jaas = " ".join(f'user_{u}="{p}"' for u, p in PLAIN_USERS.items())
    path = root / "server.properties"
    path.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:{sasl_ssl},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext},SSL://127.0.0.1:{mtls}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={tls.keystore}\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={tls.truststore}\n"
        "listener.name.ssl.ssl.client.auth=required\n"
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n"
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config="
        f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};\n"
        "group.initial.rebalance.delay.ms=0\n"
        "connection.failed.authentication.delay.ms=300\n" + extra
    )
    return path


def create_scram_users(bootstrap: str, users: dict[str, tuple[str, str]] = USERS) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upserts = [
        UserScramCredentialUpsertion(
            user, ScramCredentialInfo(getattr(ScramMechanism, mech.replace("-", "_")), 4096), pw.encode()
        )
        for user, (mech, pw) in users.items()
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=30)


@contextlib.contextmanager
def secure_broker(root: Path, extra: str = "") -> Iterator[SecureBroker]:
    tls = make_tls_files(root / "tls")
    alice = make_client_cert(tls, "alice", "CN=alice,OU=eng,O=acme")
    mallory = make_client_cert(tls, "mallory", "CN=mallory", trusted=False)
    ports = (free_port(), free_port(), free_port())
    config = write_config(root, tls, ports, extra)
    proc = BrokerProcess(root / "data", extra=["--config", str(config)]).start()
    try:
        create_scram_users(proc.bootstrap)
        yield SecureBroker(proc, tls, alice, mallory, proc.port, *ports)
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()[-5000:]}"
