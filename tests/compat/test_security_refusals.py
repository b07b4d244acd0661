"""What a secured broker refuses, on the wire, and that it keeps serving everyone else.

Wrong password, unknown user, wrong mechanism, a request before
authentication, a plaintext client on the TLS port and a TLS client on the
plaintext port, an untrusted or missing client certificate, a 100 MB frame
before authentication, garbage before and inside TLS: each gets Kafka's answer
(or a closed connection where Kafka closes it) and nothing else. Also: SASL
session expiry and re-authentication (KIP-368), certificates replaced without a
restart, and the bundled client's error for refused credentials.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from tests.compat.security_broker import SecureBroker, secure_broker
from tests.integration.test_abuse import abuse
from tests.support.certs import write_server_keystore
from tests.wire import RawClient

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    with secure_broker(tmp_path_factory.mktemp("refusals")) as broker:
        yield broker


def still_serves(sb: SecureBroker) -> None:
    """A well-behaved SCRAM client over SASL_SSL produces and reads back a record."""
    from confluent_kafka import Producer

    producer = Producer(sb.confluent("scram512"))
    producer.produce("still-serving", b"ok")
    assert producer.flush(20) == 0


def confluent_errors(conf: dict[str, str]) -> list[str]:
    """The error callback's messages of a producer that tries to connect for a few seconds."""
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer({**conf, "error_cb": lambda e: errors.append(str(e))})
    producer.produce("refused", b"x")
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    producer.flush(1)
    return errors


def _plain(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def test_wrong_password_and_unknown_user(sb: SecureBroker) -> None:
    for conf in (
        sb.confluent("scram512", password="wrong"),
        sb.confluent("scram512", user="nobody", password="x"),
        sb.confluent("plain", password="wrong"),
    ):
        errors = confluent_errors(conf)
        assert any("Authentication failed" in e for e in errors), errors
    still_serves(sb)


def test_unsupported_mechanism_answers_the_enabled_ones_then_closes(sb: SecureBroker) -> None:
    with RawClient(sb.sasl_ssl, tls=sb.client_context()) as c:
        answer = c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert sorted(answer.mechanisms) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert c.is_closed()
    errors = confluent_errors({**sb.confluent("scram512"), "sasl.mechanism": "PLAIN"})
    assert errors
    still_serves(sb)


def test_request_before_authentication_closes_the_connection(sb: SecureBroker) -> None:
    with RawClient(sb.sasl_plaintext) as c:
        assert (
            c.request(
                API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
            ).error_code
            == 0
        )
        c.send(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
        assert c.is_closed()
    with RawClient(sb.sasl_plaintext) as c:  # SaslAuthenticate with no handshake before it
        answer = c.request(SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", "alice-secret")})
        assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert c.is_closed()


def test_failed_plain_authentication_is_answered_late_then_closed(sb: SecureBroker) -> None:
    with RawClient(sb.sasl_plaintext) as c:
        assert c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        started = time.monotonic()
        answer = c.request(SASL_AUTHENTICATE, 2, {"auth_bytes": _plain("alice", "nope")})
        assert time.monotonic() - started >= 0.25  # connection.failed.authentication.delay.ms=300
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert c.is_closed()


def test_plain_with_handshake_v1_and_v0(sb: SecureBroker) -> None:
    with RawClient(sb.sasl_plaintext) as c:
        assert c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).mechanisms == ["PLAIN"]
        answer = c.request(SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", "alice-secret")})
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 0)
        assert c.request(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False}).brokers
    with RawClient(sb.sasl_plaintext) as c:  # v0: the token follows as a bare frame
        assert c.request(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
        c.send_frame(_plain("alice", "alice-secret"))
        assert c.recv_frame() == b""
        assert c.request(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False}).brokers
    with RawClient(sb.sasl_plaintext) as c:  # v0 with a wrong password: closed, no answer
        assert c.request(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
        c.send_frame(_plain("alice", "nope"))
        assert c.is_closed()


def test_sasl_handshake_on_a_listener_without_sasl(sb: SecureBroker) -> None:
    with RawClient(sb.plaintext) as c:
        assert c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_huge_frame_before_authentication_is_refused(sb: SecureBroker) -> None:
    with RawClient(sb.sasl_ssl, tls=sb.client_context()) as c:
        c.sock.sendall(struct.pack(">i", 100 * 1024 * 1024) + b"\0" * 1024)
        assert c.is_closed()
    with RawClient(sb.sasl_plaintext) as c:
        assert c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        c.sock.sendall(struct.pack(">i", 100 * 1024 * 1024) + b"\0" * 4096)
        assert c.is_closed()
    still_serves(sb)


def test_plaintext_client_on_the_tls_port_and_tls_client_on_the_plaintext_port(sb: SecureBroker) -> None:
    with RawClient(sb.sasl_ssl) as c:
        c.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert c.is_closed()
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        RawClient(sb.plaintext, timeout=5, tls=sb.client_context())
    errors = confluent_errors({**sb.confluent("scram512"), "bootstrap.servers": sb.proc.bootstrap})
    assert errors
    still_serves(sb)


def _handshake_refused(port: int, ctx: ssl.SSLContext) -> bool:
    try:
        with RawClient(port, timeout=5, tls=ctx) as c:  # TLS 1.3: the refusal may come after the handshake
            c.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            c.recv_frame()
    except (ssl.SSLError, ConnectionError, OSError):
        return True
    return False


def test_mtls_refuses_untrusted_and_missing_certificates(sb: SecureBroker) -> None:
    assert _handshake_refused(sb.ssl, sb.client_context(sb.untrusted_cert))
    assert _handshake_refused(sb.ssl, sb.client_context())
    assert not _handshake_refused(sb.ssl, sb.client_context(sb.client_cert))
    errors = confluent_errors(
        {
            **sb.confluent("mtls"),
            "ssl.certificate.location": str(sb.untrusted_cert.cert),
            "ssl.key.location": str(sb.untrusted_cert.key),
        }
    )
    assert errors
    still_serves(sb)


def _refusal_alert(port: int, ctx: ssl.SSLContext, version: ssl.TLSVersion) -> str:
    """The error OpenSSL (Python's ssl) reports when the broker refuses this client's handshake."""
    ctx.minimum_version = ctx.maximum_version = version
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"\0\0\0\0")  # TLS 1.3: the client's handshake is done before the server decides
                tls.recv(1)
        except (ssl.SSLError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return "no error"


@pytest.mark.parametrize(
    ("version", "alert"),
    [(ssl.TLSVersion.TLSv1_3, "CERTIFICATE_REQUIRED"), (ssl.TLSVersion.TLSv1_2, "HANDSHAKE_FAILURE")],
)
def test_a_missing_client_certificate_gets_a_tls_alert(
    sb: SecureBroker, version: ssl.TLSVersion, alert: str
) -> None:
    """As Kafka (and any TLS server): the handshake alert reaches the client before the connection
    closes, so clients report an authentication failure (Java: SslAuthenticationException) at once
    instead of retrying a connection that merely dropped."""
    assert alert in _refusal_alert(sb.ssl, sb.client_context(), version)
    still_serves(sb)


async def _garbage_inside_tls(port: int, ctx: ssl.SSLContext, connections: int, seconds: float) -> int:
    rng = random.Random(7)
    deadline = time.monotonic() + seconds
    sent = 0

    async def one() -> None:
        nonlocal sent
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
            except (OSError, ssl.SSLError):
                await asyncio.sleep(0.05)
                continue
            try:
                body = os.urandom(rng.randrange(1, 300))
                writer.write(struct.pack(">i", len(body)) + body if rng.random() < 0.5 else body)
                sent += 1
                await writer.drain()
                await asyncio.wait_for(reader.read(1024), timeout=0.3)
            except (OSError, TimeoutError, ssl.SSLError):
                pass
            finally:
                writer.close()

    await asyncio.gather(*(one() for _ in range(connections)))
    return sent


def test_garbage_before_and_inside_tls_while_a_client_is_served(sb: SecureBroker) -> None:
    async def both() -> tuple[int, int]:
        return await asyncio.gather(
            abuse(sb.sasl_ssl, 20, 4.0, seed=3),
            _garbage_inside_tls(sb.sasl_ssl, sb.client_context(), 10, 4.0),
        )

    before, inside = asyncio.run(both())
    assert before > 50 and inside > 10
    still_serves(sb)
    assert "Traceback" not in sb.proc.log()


def test_bundled_client_reports_refused_credentials(sb: SecureBroker) -> None:
    from client import AdminClient, AuthenticationError

    with pytest.raises(AuthenticationError, match="Authentication failed"):
        admin = AdminClient(sb.confluent("scram512", password="wrong"), default_api_timeout_ms=5000)
        try:
            admin.check_connection()
        finally:
            admin.close()


def test_certificates_are_replaced_without_a_restart(sb: SecureBroker) -> None:
    """A renewed certificate (same subject: Kafka refuses a changed one unless ssl.allow.dn.changes)
    is served to new connections after SIGHUP; connections opened before stay up."""

    def server_cert() -> bytes:
        raw = socket.create_connection(("127.0.0.1", sb.sasl_ssl))
        with sb.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der

    before = server_cert()
    kept = RawClient(sb.sasl_ssl, tls=sb.client_context())
    write_server_keystore(sb.tls, common_name="broker")
    assert sb.proc.proc is not None
    sb.proc.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while server_cert() == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server_cert() != before
    with kept:
        assert kept.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"}).error_code == 0
    still_serves(sb)


def test_sessions_expire_and_clients_reauthenticate(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    with secure_broker(tmp_path, extra="connections.max.reauth.ms=1500\n") as sb:
        with RawClient(sb.sasl_plaintext) as c:
            assert c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
            answer = c.request(SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", "alice-secret")})
            assert answer.session_lifetime_ms == 1500
            time.sleep(1.0)  # re-authenticate on the same connection before the session ends
            assert c.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
            answer = c.request(SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", "alice-secret")})
            assert answer.error_code == 0
            time.sleep(1.0)
            assert c.request(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False}).brokers
            time.sleep(1.7)  # now past the session: anything but re-authentication closes it
            c.send(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
            assert c.is_closed()
        errors: list[str] = []
        producer = Producer({**sb.confluent("scram512"), "error_cb": lambda e: errors.append(str(e))})
        delivered = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # librdkafka re-authenticates (KIP-368) as it goes
            producer.produce("reauth", b"x", on_delivery=lambda err, _m: None if err else None)
            delivered += 1
            producer.poll(0.05)
        assert producer.flush(20) == 0
        assert not [e for e in errors if "Authentication" in e], errors


def test_connections_still_in_the_tls_handshake_count_against_the_limits(tmp_path: Path) -> None:
    """Kafka counts a connection from its accept: sockets that never finish (or start) the TLS
    handshake use up max.connections.per.ip, so the next client is closed before any TLS work."""
    with secure_broker(tmp_path, extra="max.connections.per.ip=3\n") as sb:
        ctx = sb.client_context(sb.client_cert)
        stalled = [socket.create_connection(("127.0.0.1", sb.ssl)) for _ in range(2)]  # no ClientHello
        try:
            time.sleep(0.3)
            with RawClient(sb.ssl, timeout=5, tls=ctx) as third:  # the last place: served
                third.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
                assert third.recv_frame()
                assert _handshake_refused(sb.ssl, ctx)  # a fourth is not
        finally:
            for s in stalled:
                s.close()
        time.sleep(0.3)
        # the sockets that left mid-handshake no longer count: three clients are served at once
        clients = [RawClient(sb.ssl, timeout=5, tls=ctx) for _ in range(3)]
        try:
            for c in clients:
                c.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
                assert c.recv_frame()
        finally:
            for c in clients:
                c.close()
        assert "max.connections.per.ip (3) reached for 127.0.0.1" in sb.proc.log()
