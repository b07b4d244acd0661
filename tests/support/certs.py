"""Certificates for TLS tests, made when the test runs (no private key is ever committed).

`make_tls_files(directory)` writes, as PEM:

- ``ca.pem``: the test CA (trustme), what clients verify the broker with
  (``ssl.ca.location``);
- ``server.keystore.pem``: the broker's private key followed by its certificate
  chain, for ``127.0.0.1`` and ``localhost`` (``ssl.keystore.location``); the key
  is PKCS#8-encrypted with ``key_password`` when one is given;
- ``server.truststore.pem``: the CA bundle the broker verifies client
  certificates with (``ssl.truststore.location``; the same CA, its own file so a
  test can replace one and not the other);
- ``untrusted-ca.pem``: a second CA that nothing trusts.

`make_client_cert` adds a client certificate with a given RFC 2253 subject
(``CN=alice,OU=eng,O=acme,C=US``, printed by Java exactly so), signed by the CA or
by the untrusted one. `write_server_keystore` rewrites the broker's keystore
with a new certificate (atomically: a new file renamed over the old one).
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID


@dataclass(frozen=True)
class ClientCert:
    subject: str  # RFC 2253, as Java prints it
    cert: Path  # the certificate (PEM): ssl.certificate.location
    key: Path  # its private key (PEM, PKCS#8, not encrypted): ssl.key.location
    keystore: Path  # key + certificate in one PEM file: Java's ssl.keystore.location


@dataclass(frozen=True)
class TlsFiles:
    directory: Path
    ca: Path
    keystore: Path
    key_password: str | None
    truststore: Path
    untrusted_ca: Path
    ca_obj: trustme.CA = field(repr=False, compare=False)
    untrusted_ca_obj: trustme.CA = field(repr=False, compare=False)


def make_tls_files(
    directory: Path, *, key_password: str | None = None, server_name: str = "broker"
) -> TlsFiles:
    """A CA, the broker's keystore (``CN=<server_name>``) and truststore, and an untrusted CA, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, untrusted = trustme.CA(), trustme.CA()
    files = TlsFiles(
        directory=directory,
        ca=directory / "ca.pem",
        keystore=directory / "server.keystore.pem",
        key_password=key_password,
        truststore=directory / "server.truststore.pem",
        untrusted_ca=directory / "untrusted-ca.pem",
        ca_obj=ca,
        untrusted_ca_obj=untrusted,
    )
    ca.cert_pem.write_to_path(str(files.ca))
    ca.cert_pem.write_to_path(str(files.truststore))
    untrusted.cert_pem.write_to_path(str(files.untrusted_ca))
    write_server_keystore(files, common_name=server_name, key_password=key_password)
    return files


def write_server_keystore(
    files: TlsFiles,
    *,
    common_name: str,
    key_password: str | None = None,
    path: Path | None = None,
    names: tuple[str, ...] = ("127.0.0.1", "localhost"),
) -> Path:
    """A new server key and certificate from the CA, subject ``CN=<common_name>,OU=broker,O=minikafka tests``,
    for ``names``, written over ``path`` (default: the keystore)."""
    leaf = files.ca_obj.issue_cert(
        *names, common_name=common_name, organization_name="minikafka tests", organization_unit_name="broker"
    )
    # PKCS#8 ("PRIVATE KEY" / "ENCRYPTED PRIVATE KEY"), the form Kafka's PEM key stores take
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    encryption = (
        serialization.NoEncryption()
        if key_password is None
        else serialization.BestAvailableEncryption(key_password.encode())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    target = path or files.keystore
    _write_atomically(target, key_pem + chain)
    return target


def make_client_cert(files: TlsFiles, name: str, subject: str, *, trusted: bool = True) -> ClientCert:
    """A client certificate for ``subject`` (RFC 2253), signed by the CA or, untrusted, by the other CA."""
    ca = files.ca_obj if trusted else files.untrusted_ca_obj
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name.from_rfc4514_string(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    out = ClientCert(
        subject=subject,
        cert=files.directory / f"{name}.cert.pem",
        key=files.directory / f"{name}.key.pem",
        keystore=files.directory / f"{name}.keystore.pem",
    )
    _write_atomically(out.cert, cert_pem)
    _write_atomically(out.key, key_pem)
    _write_atomically(out.keystore, key_pem + cert_pem)
    return out


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
