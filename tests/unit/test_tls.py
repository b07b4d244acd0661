"""Listener TLS: real handshakes on 127.0.0.1 between an asyncio server (uvloop, and asyncio's own loop
where the context swap matters) using ServerTls.context and blocking stdlib ssl clients in a thread."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvloop
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from broker.security.principal_mapping import SslPrincipalMapper
from broker.security.tls import _IANA_TO_OPENSSL, ServerTls, TlsSettings, _known_cipher, peer_principal
from client.tls import client_context
from tests.support.certs import ClientCert, TlsFiles, make_client_cert, make_tls_files, write_server_keystore

ALICE = "CN=alice,OU=eng,O=acme,C=US"
LOOPS = ("uvloop", "asyncio")


def run(loop: str, main: Callable[[], Awaitable[None]]) -> None:
    if loop == "uvloop":
        uvloop.run(main())
    else:
        asyncio.run(main())


@dataclass
class Serving:
    port: int
    principals: list[str]  # peer_principal of each connection, in order of acceptance


@asynccontextmanager
async def serving(tls: ServerTls, rules: str = "DEFAULT") -> AsyncIterator[Serving]:
    """An echo server on 127.0.0.1 with ``tls.context``, recording each connection's principal."""
    mapper = SslPrincipalMapper.parse(rules)
    principals: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        principals.append(peer_principal(writer.get_extra_info("ssl_object"), mapper))
        try:
            while data := await reader.read(1024):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls.context)
    try:
        yield Serving(server.sockets[0].getsockname()[1], principals)
    finally:
        server.close()
        await server.wait_closed()


def connect(
    port: int,
    *,
    ca: Path | None = None,
    cert: ClientCert | None = None,
    server_hostname: str | None = "localhost",
    context: ssl.SSLContext | None = None,
    max_version: ssl.TLSVersion | None = None,
    session: ssl.SSLSession | None = None,
) -> ssl.SSLSocket:
    """A blocking TLS client; ``server_hostname`` None sends no SNI and checks no name."""
    if context is None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if ca is not None:
            context.load_verify_locations(ca)
        context.check_hostname = server_hostname is not None
        if cert is not None:
            context.load_cert_chain(cert.cert, cert.key)
    if max_version is not None:
        context.maximum_version = max_version
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        return context.wrap_socket(sock, server_hostname=server_hostname, session=session)
    except BaseException:
        sock.close()
        raise


def echo(sock: ssl.SSLSocket, data: bytes = b"ping") -> bytes:
    sock.sendall(data)
    return sock.recv(len(data))


def talk(port: int, **kwargs: Any) -> tuple[str, bytes]:
    """Connect, echo once, close: (the server certificate's CN, what came back)."""
    with connect(port, **kwargs) as sock:
        return server_cn(sock), echo(sock)


def refused(port: int, **kwargs: Any) -> bool:
    """Whether the server turns this client away (TLS 1.3 reports a refused client certificate only
    after the client's side of the handshake is done: on the first read)."""
    try:
        with connect(port, **kwargs) as sock:
            return echo(sock) == b""
    except (ssl.SSLError, ConnectionError):
        return True


def server_cn(sock: ssl.SSLSocket) -> str:
    der = sock.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value


def settings(files: TlsFiles, **values: str | None) -> TlsSettings:
    base: dict[str, Any] = {
        "keystore_location": str(files.keystore),
        "truststore_location": str(files.truststore),
    }
    if files.key_password is not None:
        base["key_password"] = files.key_password
    return TlsSettings(**{**base, **values})


@pytest.fixture
def files(tmp_path: Path) -> TlsFiles:
    return make_tls_files(tmp_path)


@pytest.fixture
def alice(files: TlsFiles) -> ClientCert:
    return make_client_cert(files, "alice", ALICE)


@pytest.fixture
def mallory(files: TlsFiles) -> ClientCert:
    return make_client_cert(files, "mallory", "CN=mallory,O=evil", trusted=False)


def one_line_error(make: Callable[[], object]) -> str:
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# -- handshakes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_client_verifies_the_server_certificate_with_the_ca(loop: str, files: TlsFiles) -> None:
    tls = ServerTls(settings(files))

    async def main() -> None:
        async with serving(tls) as server:
            for name in ("localhost", "127.0.0.1", None):
                assert await asyncio.to_thread(talk, server.port, ca=files.ca, server_hostname=name) == (
                    "broker",
                    b"ping",
                )
            with pytest.raises(ssl.SSLCertVerificationError):  # no CA: the test CA is unknown
                await asyncio.to_thread(talk, server.port)
            with pytest.raises(ssl.SSLCertVerificationError):  # wrong name
                await asyncio.to_thread(talk, server.port, ca=files.ca, server_hostname="other.example")
            assert server.principals == ["User:ANONYMOUS"] * 3

    run(loop, main)


@pytest.mark.parametrize("loop", LOOPS)
def test_client_auth_none_asks_for_no_certificate(loop: str, files: TlsFiles, alice: ClientCert) -> None:
    tls = ServerTls(settings(files, client_auth="none"))

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(talk, server.port, ca=files.ca, cert=alice) == ("broker", b"ping")
            assert server.principals == ["User:ANONYMOUS"]

    run(loop, main)


@pytest.mark.parametrize("loop", LOOPS)
def test_client_auth_requested(loop: str, files: TlsFiles, alice: ClientCert, mallory: ClientCert) -> None:
    tls = ServerTls(settings(files, client_auth="requested"))

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(talk, server.port, ca=files.ca) == ("broker", b"ping")
            assert await asyncio.to_thread(talk, server.port, ca=files.ca, cert=alice) == ("broker", b"ping")
            assert await asyncio.to_thread(refused, server.port, ca=files.ca, cert=mallory)
            assert server.principals == ["User:ANONYMOUS", f"User:{ALICE}"]

    run(loop, main)


@pytest.mark.parametrize("loop", LOOPS)
def test_client_auth_required(loop: str, files: TlsFiles, alice: ClientCert, mallory: ClientCert) -> None:
    tls = ServerTls(settings(files, client_auth="required"))

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(refused, server.port, ca=files.ca)
            assert await asyncio.to_thread(refused, server.port, ca=files.ca, cert=mallory)
            for version in (None, ssl.TLSVersion.TLSv1_2):
                assert await asyncio.to_thread(refused, server.port, ca=files.ca, max_version=version)
                assert await asyncio.to_thread(
                    talk, server.port, ca=files.ca, cert=alice, max_version=version
                ) == (
                    "broker",
                    b"ping",
                )
            assert server.principals == [f"User:{ALICE}"] * 2

    run(loop, main)


def test_peer_principal_with_mapping_rules(files: TlsFiles, alice: ClientCert) -> None:
    tls = ServerTls(settings(files, client_auth="required"))
    bob = make_client_cert(files, "bob", "CN=bob,OU=ops,O=acme")

    async def main() -> None:
        async with serving(tls, rules="RULE:^CN=([^,]+),OU=eng,.*$/$1/U, DEFAULT") as server:
            await asyncio.to_thread(talk, server.port, ca=files.ca, cert=alice)
            await asyncio.to_thread(talk, server.port, ca=files.ca, cert=bob)
            assert server.principals == ["User:ALICE", "User:CN=bob,OU=ops,O=acme"]

    run("uvloop", main)


def test_encrypted_key_with_its_password(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path, key_password="s3cret")
    assert b"ENCRYPTED PRIVATE KEY" in files.keystore.read_bytes()
    tls = ServerTls(settings(files))

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(talk, server.port, ca=files.ca) == ("broker", b"ping")

    run("uvloop", main)


def test_key_password_mistakes_are_one_line(tmp_path: Path, files: TlsFiles) -> None:
    encrypted = make_tls_files(tmp_path / "enc", key_password="s3cret")
    wrong = one_line_error(lambda: ServerTls(settings(encrypted, key_password="nope")))
    assert str(encrypted.keystore) in wrong and "ssl.key.password" in wrong
    missing = one_line_error(lambda: ServerTls(settings(encrypted, key_password=None)))
    assert "encrypted" in missing and "ssl.key.password" in missing
    needless = one_line_error(lambda: ServerTls(settings(files, key_password="s3cret")))
    assert "not encrypted" in needless


def test_key_not_matching_the_certificate(tmp_path: Path, files: TlsFiles) -> None:
    other = write_server_keystore(files, common_name="other", path=tmp_path / "other.pem")
    key = files.keystore.read_text().split("-----BEGIN CERTIFICATE-----")[0]
    other_pem = other.read_text()
    chain = other_pem[other_pem.index("-----BEGIN CERTIFICATE-----") :]
    mixed = tmp_path / "mixed.pem"
    mixed.write_text(key + chain)
    message = one_line_error(lambda: ServerTls(settings(files, keystore_location=str(mixed))))
    assert str(mixed) in message and "does not match" in message


def test_missing_or_unreadable_files_are_named(tmp_path: Path, files: TlsFiles) -> None:
    gone = tmp_path / "gone.pem"
    message = one_line_error(lambda: ServerTls(settings(files, keystore_location=str(gone))))
    assert message.startswith(f"ssl.keystore.location {gone}:")
    message = one_line_error(lambda: ServerTls(settings(files, truststore_location=str(gone))))
    assert message.startswith(f"ssl.truststore.location {gone}:")
    junk = tmp_path / "junk.jks"
    junk.write_bytes(b"\xfe\xed\xfe\xed binary")
    message = one_line_error(lambda: ServerTls(settings(files, keystore_location=str(junk))))
    assert str(junk) in message and "no PEM content" in message
    empty = tmp_path / "empty.pem"
    empty.write_text(files.keystore.read_text().split("-----BEGIN CERTIFICATE-----")[0])
    message = one_line_error(lambda: ServerTls(settings(files, truststore_location=str(empty))))
    assert message == f"ssl.truststore.location {empty}: at least one certificate expected, but none found"


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"keystore_type": "JKS"}, "ssl.keystore.type=JKS is not supported: convert"),
        ({"truststore_type": "JKS"}, "ssl.truststore.type=JKS is not supported: convert"),
        ({"keystore_password": "x"}, "ssl.keystore.password cannot be set with PEM"),
        ({"keystore_location": None}, "needs ssl.keystore.location"),
        ({"keystore_certificate_chain": "x"}, "ssl.keystore.key is not"),
        ({"keystore_key": "x"}, "ssl.keystore.certificate.chain is not"),
        (
            {"keystore_key": "x", "keystore_certificate_chain": "y"},
            "both ssl.keystore.location and ssl.keystore.key",
        ),
        ({"truststore_certificates": "x"}, "both ssl.truststore.location and ssl.truststore.certificates"),
        ({"client_auth": "always"}, "ssl.client.auth 'always'"),
        ({"enabled_protocols": "SSLv3"}, "unsupported protocol 'SSLv3'"),
        ({"cipher_suites": "TLS_NO_SUCH_SUITE"}, "unknown to OpenSSL: TLS_NO_SUCH_SUITE"),
        (
            {"cipher_suites": "TLS_AES_128_GCM_SHA256", "enabled_protocols": "TLSv1.2"},
            "TLSv1.3 is not enabled",
        ),
        ({"allow_dn_changes": "maybe"}, "ssl.allow.dn.changes 'maybe'"),
    ],
)
def test_bad_settings(files: TlsFiles, values: dict[str, str | None], says: str) -> None:
    assert says in one_line_error(lambda: ServerTls(settings(files, **values)))


def test_from_lookup_reads_kafka_keys() -> None:
    props = {
        "ssl.keystore.location": "/k.pem",
        "ssl.key.password": "pw",
        "ssl.keystore.certificate.chain": "chain",
        "ssl.truststore.certificates": "certs",
        "ssl.client.auth": "required",
        "ssl.enabled.protocols": "TLSv1.3",
        "ssl.principal.mapping.rules": "RULE:(.*)/$1/L",
        "ssl.allow.dn.changes": "true",
        "ssl.protocol": "TLSv1.3",
        "ssl.endpoint.identification.algorithm": "https",
    }
    s = TlsSettings.from_lookup(props.get)
    assert (s.keystore_location, s.key_password, s.keystore_certificate_chain) == ("/k.pem", "pw", "chain")
    assert (s.truststore_certificates, s.client_auth, s.enabled_protocols) == ("certs", "required", "TLSv1.3")
    assert (s.principal_mapping_rules, s.allow_dn_changes, s.ignored) == (
        "RULE:(.*)/$1/L",
        "true",
        ("ssl.protocol",),
    )
    assert (s.keystore_type, s.truststore_type, s.cipher_suites) == ("PEM", "PEM", None)


def test_inline_pem_stores(files: TlsFiles, alice: ClientCert) -> None:
    pem = files.keystore.read_text()
    cut = pem.index("-----BEGIN CERTIFICATE-----")
    tls = ServerTls(
        TlsSettings(
            keystore_key=pem[:cut],
            keystore_certificate_chain=pem[cut:],
            truststore_certificates=files.truststore.read_text(),
            client_auth="required",
        )
    )
    assert tls.sources == []

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(talk, server.port, ca=files.ca, cert=alice) == ("broker", b"ping")
            assert server.principals == [f"User:{ALICE}"]

    run("uvloop", main)


def test_pkcs12_stores(tmp_path: Path, files: TlsFiles, alice: ClientCert) -> None:
    pem = files.keystore.read_bytes()
    key = serialization.load_pem_private_key(pem, None)
    chain = x509.load_pem_x509_certificates(pem[pem.index(b"-----BEGIN CERTIFICATE") :])
    encryption = serialization.BestAvailableEncryption(b"storepw")
    keystore, truststore = tmp_path / "server.p12", tmp_path / "trust.p12"
    keystore.write_bytes(
        pkcs12.serialize_key_and_certificates(b"kafka", key, chain[0], chain[1:], encryption)
    )  # type: ignore[arg-type]
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    truststore.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca], encryption))
    p12 = {"keystore_type": "PKCS12", "keystore_location": str(keystore), "keystore_password": "storepw"}
    tls = ServerTls(
        TlsSettings(
            **p12,
            truststore_type="PKCS12",
            truststore_location=str(truststore),
            truststore_password="storepw",
            client_auth="required",
        )
    )

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(talk, server.port, ca=files.ca, cert=alice) == ("broker", b"ping")

    run("uvloop", main)
    wrong = one_line_error(lambda: ServerTls(TlsSettings(**{**p12, "keystore_password": "nope"})))
    assert str(keystore) in wrong and "ssl.keystore.password" in wrong


def test_cipher_suites_take_kafka_names(files: TlsFiles) -> None:
    tls = ServerTls(
        settings(files, cipher_suites="TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256")
    )

    async def main() -> None:
        async with serving(tls) as server:
            with await asyncio.to_thread(
                connect, server.port, ca=files.ca, max_version=ssl.TLSVersion.TLSv1_2
            ) as sock:
                assert sock.cipher()[0] == "ECDHE-ECDSA-AES128-GCM-SHA256"

    run("uvloop", main)


def test_only_tls13_suites_turn_tls12_off(files: TlsFiles) -> None:
    tls = ServerTls(settings(files, cipher_suites="TLS_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256"))

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(talk, server.port, ca=files.ca) == ("broker", b"ping")
            with pytest.raises(ssl.SSLError):
                await asyncio.to_thread(talk, server.port, ca=files.ca, max_version=ssl.TLSVersion.TLSv1_2)

    run("uvloop", main)


def test_every_translated_suite_is_known_to_openssl() -> None:
    assert [name for name in _IANA_TO_OPENSSL.values() if not _known_cipher(name)] == []


# -- reload ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("server_hostname", ["localhost", "127.0.0.1", None])  # SNI, none, none and no check
def test_reload_swaps_the_certificate_for_new_connections(
    loop: str, server_hostname: str | None, files: TlsFiles
) -> None:
    tls = ServerTls(settings(files, allow_dn_changes="true"))
    context = tls.context

    async def main() -> None:
        async with serving(tls) as server:
            kwargs = {"ca": files.ca, "server_hostname": server_hostname}
            with await asyncio.to_thread(connect, server.port, **kwargs) as old:
                assert server_cn(old) == "broker"
                assert await asyncio.to_thread(echo, old, b"before") == b"before"
                assert not tls.maybe_reload()
                write_server_keystore(files, common_name="renamed")
                assert tls.maybe_reload()
                assert not tls.maybe_reload()
                assert await asyncio.to_thread(talk, server.port, **kwargs) == ("renamed", b"ping")
                assert await asyncio.to_thread(echo, old, b"after") == b"after"  # the open connection goes on
            assert tls.context is context

    run(loop, main)


def test_the_inter_broker_client_context_follows_reloads(files: TlsFiles) -> None:
    """Links made after a reload present the new certificate: the client context is made once
    per loaded set of stores, and again after a reload."""
    tls = ServerTls(settings(files, allow_dn_changes="true"))
    first = tls.client_context(False)
    assert tls.client_context(False) is first and tls.client_context(True) is not first
    write_server_keystore(files, common_name="renamed")
    assert tls.client_context(False) is first  # no reload yet: the stores in use are the old ones
    assert tls.maybe_reload()
    renewed = tls.client_context(False)
    assert renewed is not first and tls.client_context(False) is renewed


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLSv1.2", "TLSv1.3"]
)
def test_sessions_resume_but_not_past_a_reload(loop: str, version: ssl.TLSVersion, files: TlsFiles) -> None:
    """A session resumed past a reload would skip the new certificate (and the new trust store's verdict)."""
    tls = ServerTls(settings(files, allow_dn_changes="true"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(files.ca)
    context.maximum_version = version

    def visit(port: int, session: ssl.SSLSession | None) -> tuple[ssl.SSLSession | None, bool, str]:
        with connect(port, context=context, session=session) as sock:
            echo(sock)  # TLS 1.3 tickets arrive after the handshake
            out = sock.session, sock.session_reused, server_cn(sock)
            sock.unwrap()  # a clean close: OpenSSL keeps the session resumable
            return out

    async def main() -> None:
        async with serving(tls) as server:
            session, reused, cn = await asyncio.to_thread(visit, server.port, None)
            assert (reused, cn) == (False, "broker")
            _, reused, cn = await asyncio.to_thread(visit, server.port, session)
            assert (reused, cn) == (True, "broker")
            write_server_keystore(files, common_name="renamed")
            assert tls.maybe_reload()
            _, reused, cn = await asyncio.to_thread(visit, server.port, session)
            assert (reused, cn) == (False, "renamed")

    run(loop, main)


def test_reload_keeps_kafkas_rule_on_subject_and_names(
    files: TlsFiles, caplog: pytest.LogCaptureFixture
) -> None:
    tls = ServerTls(settings(files))
    caplog.set_level(logging.WARNING, "minikafka.tls")
    write_server_keystore(files, common_name="renamed")
    assert not tls.maybe_reload()
    assert "ssl.allow.dn.changes=true" in caplog.text
    write_server_keystore(files, common_name="broker", names=("127.0.0.1",))
    assert not tls.maybe_reload()
    assert "lacks subject alternative names DNSName:localhost" in caplog.text
    old_serial = tls.certificate.serial_number
    write_server_keystore(files, common_name="broker")  # a renewal: same subject and names
    assert tls.maybe_reload()
    assert tls.certificate.serial_number != old_serial
    assert len(caplog.records) == 2


def test_failed_reload_warns_once_and_keeps_serving(
    files: TlsFiles, caplog: pytest.LogCaptureFixture
) -> None:
    tls = ServerTls(settings(files))
    good = files.keystore.read_bytes()
    caplog.set_level(logging.WARNING, "minikafka.tls")

    async def main() -> None:
        async with serving(tls) as server:
            files.keystore.write_bytes(good[: len(good) // 2])
            assert not tls.maybe_reload()
            assert not tls.maybe_reload()
            assert len(caplog.records) == 1 and str(files.keystore) in caplog.records[0].getMessage()
            assert await asyncio.to_thread(talk, server.port, ca=files.ca) == ("broker", b"ping")
            files.keystore.unlink()
            assert not tls.maybe_reload()
            assert len(caplog.records) == 2
            write_server_keystore(files, common_name="broker")
            assert tls.maybe_reload()
            assert await asyncio.to_thread(talk, server.port, ca=files.ca) == ("broker", b"ping")

    run("uvloop", main)


@pytest.mark.parametrize("loop", LOOPS)
def test_reloaded_truststore_verifies_new_clients(loop: str, files: TlsFiles, mallory: ClientCert) -> None:
    tls = ServerTls(settings(files, client_auth="required"))

    async def main() -> None:
        async with serving(tls) as server:
            assert await asyncio.to_thread(refused, server.port, ca=files.ca, cert=mallory)
            files.truststore.write_bytes(files.untrusted_ca.read_bytes())
            assert tls.maybe_reload()
            assert await asyncio.to_thread(talk, server.port, ca=files.ca, cert=mallory) == (
                "broker",
                b"ping",
            )
            assert server.principals == ["User:CN=mallory,O=evil"]

    run(loop, main)


# -- the bundled client's context -------------------------------------------------------------------


@pytest.fixture
def encrypted_alice(tmp_path: Path, alice: ClientCert) -> Path:
    key = serialization.load_pem_private_key(alice.key.read_bytes(), None)
    path = tmp_path / "alice.enc.key"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    return path


def test_client_context(files: TlsFiles, alice: ClientCert, encrypted_alice: Path) -> None:
    tls = ServerTls(settings(files, client_auth="required"))
    configs: list[dict[str, Any]] = [
        {
            "ssl.ca.location": str(files.ca),
            "ssl.certificate.location": str(alice.cert),
            "ssl.key.location": str(alice.key),
        },
        {"ssl.truststore.location": str(files.ca), "ssl.keystore.location": str(alice.keystore)},
        {
            "ssl.ca.location": str(files.ca),
            "ssl.certificate.location": str(alice.cert),
            "ssl.key.location": str(encrypted_alice),
            "ssl.key.password": "pw",
        },
    ]

    async def main() -> None:
        async with serving(tls) as server:
            for config in configs:
                context = client_context(config)
                assert context.check_hostname
                assert await asyncio.to_thread(talk, server.port, context=context) == ("broker", b"ping")
            strict = client_context(
                {"ssl.ca.location": str(files.ca), "ssl.keystore.location": str(alice.keystore)}
            )
            with pytest.raises(ssl.SSLCertVerificationError):
                await asyncio.to_thread(talk, server.port, context=strict, server_hostname="other.example")
            lax = client_context(
                {
                    "ssl.ca.location": str(files.ca),
                    "ssl.keystore.location": str(alice.keystore),
                    "ssl.endpoint.identification.algorithm": "none",
                }
            )
            assert not lax.check_hostname
            assert await asyncio.to_thread(talk, server.port, context=lax, server_hostname=None) == (
                "broker",
                b"ping",
            )
            assert server.principals == [f"User:{ALICE}"] * 4  # not the one that refused the broker's name

    run("uvloop", main)


def test_client_context_mistakes_are_one_line(
    tmp_path: Path, files: TlsFiles, alice: ClientCert, encrypted_alice: Path
) -> None:
    gone = str(tmp_path / "gone.pem")
    assert one_line_error(lambda: client_context({"ssl.ca.location": gone})).startswith(
        f"ssl.ca.location {gone}:"
    )
    message = one_line_error(
        lambda: client_context({"ssl.certificate.location": str(alice.cert), "ssl.key.location": gone})
    )
    assert message.startswith(f"ssl.key.location {gone}")
    own = {"ssl.certificate.location": str(alice.cert), "ssl.key.location": str(encrypted_alice)}
    assert "set ssl.key.password" in one_line_error(lambda: client_context(own))  # and no terminal prompt
    assert "wrong ssl.key.password" in one_line_error(
        lambda: client_context({**own, "ssl.key.password": "nope"})
    )
    other = make_client_cert(files, "other", "CN=other")
    mismatch = {"ssl.certificate.location": str(other.cert), "ssl.key.location": str(alice.key)}
    assert "does not match" in one_line_error(lambda: client_context(mismatch))
    assert "expected https" in one_line_error(
        lambda: client_context({"ssl.endpoint.identification.algorithm": "x"})
    )
