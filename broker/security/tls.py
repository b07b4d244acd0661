"""TLS for SSL and SASL_SSL listeners: a server SSLContext from Kafka's ``ssl.*`` keys, reloaded on change.

Keys (server.properties names; the caller resolves ``listener.name.<l>.<key>``
before ``<key>``), all strings as written there:

- ``ssl.keystore.type``: ``PEM`` (the default here; Kafka's is JKS) or ``PKCS12``.
  JKS is refused with a ValueError saying how to convert it.
- ``ssl.keystore.location``: PEM: one file with the private key and the
  certificate chain (leaf first); PKCS12: the store, opened with
  ``ssl.keystore.password`` (which PEM refuses, as in Kafka).
- ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``: the same PEM inline.
- ``ssl.key.password``: the password of an encrypted PEM key (PKCS#8
  ``ENCRYPTED PRIVATE KEY`` as Kafka expects, or OpenSSL's traditional format).
  Set for a key that is not encrypted, it is an error, as in Kafka.
- ``ssl.truststore.type`` (PEM or PKCS12), ``ssl.truststore.location`` (a PEM CA
  bundle), ``ssl.truststore.certificates`` (the same inline),
  ``ssl.truststore.password`` (PKCS12 only). No trust store and a client auth
  other than ``none``: the system's CAs verify clients (Kafka: the JVM's).
- ``ssl.client.auth``: ``none`` (default), ``requested`` (a certificate is asked
  for; one that is sent must verify) or ``required`` (no trusted certificate,
  no handshake).
- ``ssl.enabled.protocols``: default ``TLSv1.2,TLSv1.3``; the context accepts
  the range from the lowest to the highest listed.
- ``ssl.cipher.suites``: OpenSSL names, or Kafka's (IANA) names for the usual
  ECDHE/DHE suites, which are translated. TLS 1.3 suites cannot be narrowed
  with Python's ssl module: listing only TLS 1.3 suites turns TLS 1.2 off,
  and TLS 1.3 keeps OpenSSL's three suites.
- ``ssl.allow.dn.changes`` / ``ssl.allow.san.changes`` (default false, as in
  Kafka): whether a reload may change the server certificate's subject, or drop
  one of its subject alternative names. A refused change is a failed reload.
- ``ssl.principal.mapping.rules``: read into `TlsSettings` but used by the caller
  (broker/security/principal_mapping.py).
- Java-only keys (``ssl.protocol``, ``ssl.provider``, ``ssl.keymanager.algorithm``,
  ``ssl.trustmanager.algorithm``, ``ssl.secure.random.implementation``,
  ``ssl.engine.factory.class``) are listed in `TlsSettings.ignored`.

Every mistake (missing or unreadable file, wrong password, key not matching
the certificate, bad value) is a ValueError of one line naming the key and file.

Swapping without a restart: `ServerTls.context` is one fixed "listener" context,
given once to ``loop.create_server(ssl=...)``, whose ``wrap_bio`` (what uvloop
and asyncio call for every accepted connection) and ``wrap_socket`` hand the
connection to the current "inner" context, built from the key and trust
stores. A reload builds a new inner context and swaps the reference: the
listening socket and open connections are untouched, and connections accepted
afterwards are made entirely by the new context: certificate, trust store,
and session cache and ticket keys too, so a client cannot resume a session
from before the reload (which would skip the new certificate and the new
trust store's verdict on its own certificate), as with Kafka's new SSLContext.

Why not the usual ``sni_callback`` setting ``ssl_object.context``: OpenSSL calls
it on every ClientHello, with SNI or without, under uvloop and asyncio's loop
alike, and it does swap the certificate and trust store; but sessions stay in
the context the connection was made from, and TLS 1.2 clients that close
cleanly resumed their pre-reload sessions every time in a trial, getting the
old certificate.

`maybe_reload` compares each source file's (mtime, size, inode) with the last
look. It reads files on the calling thread: a few small files, a few ms.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import secrets
import socket
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from broker.security.principal_mapping import SslPrincipalMapper, subject_dn
from broker.security.tls_alerts import AlertingSSLObject, attach

__all__ = ["ServerTls", "TlsSettings", "peer_principal"]

log = logging.getLogger("minikafka.tls")

ANONYMOUS = "User:ANONYMOUS"

_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
# Kafka's (IANA) names of the usual TLS 1.2 suites and OpenSSL's, as `openssl ciphers -stdname` pairs them.
_IANA_TO_OPENSSL = dict(
    line.split()
    for line in """
    TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 ECDHE-ECDSA-AES256-GCM-SHA384
    TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 ECDHE-ECDSA-AES128-GCM-SHA256
    TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 ECDHE-ECDSA-CHACHA20-POLY1305
    TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384 ECDHE-ECDSA-AES256-SHA384
    TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256 ECDHE-ECDSA-AES128-SHA256
    TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA ECDHE-ECDSA-AES256-SHA
    TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA ECDHE-ECDSA-AES128-SHA
    TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 ECDHE-RSA-AES256-GCM-SHA384
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 ECDHE-RSA-AES128-GCM-SHA256
    TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 ECDHE-RSA-CHACHA20-POLY1305
    TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384 ECDHE-RSA-AES256-SHA384
    TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 ECDHE-RSA-AES128-SHA256
    TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA ECDHE-RSA-AES256-SHA
    TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA ECDHE-RSA-AES128-SHA
    TLS_DHE_RSA_WITH_AES_256_GCM_SHA384 DHE-RSA-AES256-GCM-SHA384
    TLS_DHE_RSA_WITH_AES_128_GCM_SHA256 DHE-RSA-AES128-GCM-SHA256
    TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256 DHE-RSA-CHACHA20-POLY1305
    TLS_DHE_RSA_WITH_AES_256_CBC_SHA256 DHE-RSA-AES256-SHA256
    TLS_DHE_RSA_WITH_AES_128_CBC_SHA256 DHE-RSA-AES128-SHA256
    TLS_DHE_RSA_WITH_AES_256_CBC_SHA DHE-RSA-AES256-SHA
    TLS_DHE_RSA_WITH_AES_128_CBC_SHA DHE-RSA-AES128-SHA
    TLS_RSA_WITH_AES_256_GCM_SHA384 AES256-GCM-SHA384
    TLS_RSA_WITH_AES_128_GCM_SHA256 AES128-GCM-SHA256
    TLS_RSA_WITH_AES_256_CBC_SHA256 AES256-SHA256
    TLS_RSA_WITH_AES_128_CBC_SHA256 AES128-SHA256
    TLS_RSA_WITH_AES_256_CBC_SHA AES256-SHA
    TLS_RSA_WITH_AES_128_CBC_SHA AES128-SHA
    """.strip().splitlines()
)
_SIGNALING_SUITE = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"  # Java lists it; OpenSSL always sends its equivalent
_IGNORED_KEYS = (
    "ssl.protocol",
    "ssl.provider",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
)
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.DOTALL)


@dataclass
class TlsSettings:
    """One listener's ``ssl.*`` values as written in server.properties (None: not set)."""

    keystore_type: str = "PEM"
    keystore_location: str | None = None
    keystore_password: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    keystore_key: str | None = field(default=None, repr=False)
    keystore_certificate_chain: str | None = None
    truststore_type: str = "PEM"
    truststore_location: str | None = None
    truststore_password: str | None = field(default=None, repr=False)
    truststore_certificates: str | None = None
    client_auth: str = "none"
    enabled_protocols: str = "TLSv1.2,TLSv1.3"
    cipher_suites: str | None = None
    allow_dn_changes: str = "false"
    allow_san_changes: str = "false"
    principal_mapping_rules: str = "DEFAULT"
    ignored: tuple[str, ...] = ()  # Java-only keys that were set

    @staticmethod
    def key(field_name: str) -> str:
        """The server.properties key of a field: ``keystore_location`` -> ``ssl.keystore.location``."""
        return "ssl." + field_name.replace("_", ".")

    @classmethod
    def from_lookup(cls, get: Callable[[str], str | None]) -> TlsSettings:
        """Read every key through ``get`` (None: not set, keep the default)."""
        values: dict[str, str] = {}
        for f in dataclasses.fields(cls):
            if f.name != "ignored" and (value := get(cls.key(f.name))) is not None:
                values[f.name] = value
        ignored = tuple(key for key in _IGNORED_KEYS if get(key) is not None)
        return cls(**values, ignored=ignored)


@dataclass
class _Stores:
    """What one load of the key and trust stores produced."""

    context: ssl.SSLContext
    certificate: x509.Certificate  # the leaf: the server's own certificate


class _ListenerContext(ssl.SSLContext):
    """The listening socket's context: each connection is made by the context ``current()`` returns."""

    current: Callable[[], ssl.SSLContext]

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        sslobj = self.current().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        return attach(sslobj, outgoing)  # a refused handshake's alert reaches the client

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        return self.current().wrap_socket(
            sock, server_side, do_handshake_on_connect, suppress_ragged_eofs, server_hostname, session
        )


class ServerTls:
    """The TLS side of one listener: `context` for create_server, `maybe_reload` to pick up new files."""

    def __init__(self, settings: TlsSettings) -> None:
        """ValueError (one line) for a bad setting or a store that cannot be used."""
        self.settings = settings
        self._verify_mode = _verify_mode(settings.client_auth)
        self._versions = _versions(settings.enabled_protocols, settings.cipher_suites)
        self._ciphers = _openssl_ciphers(settings.cipher_suites)
        self._allow_dn_changes = _boolean(settings, "allow_dn_changes")
        self._allow_san_changes = _boolean(settings, "allow_san_changes")
        _check_combinations(settings)
        self._listener = _ListenerContext(ssl.PROTOCOL_TLS_SERVER)
        self._configure(self._listener)  # never handshakes, but reads like the real thing
        self._listener.current = lambda: self._stores.context
        self._seen = self._signature()
        self._stores = self._load()
        self._client_stores = self._stores
        self._client_contexts: dict[bool, ssl.SSLContext] = {}
        if settings.ignored:
            log.info("ignoring Java-only TLS settings: %s", ", ".join(settings.ignored))

    @property
    def context(self) -> ssl.SSLContext:
        """The server context for ``loop.create_server(ssl=...)``; the same object across reloads."""
        return self._listener

    @property
    def certificate(self) -> x509.Certificate:
        """The server certificate new connections get."""
        return self._stores.certificate

    @property
    def sources(self) -> list[str]:
        """The files `maybe_reload` watches."""
        s = self.settings
        return [p for p in (s.keystore_location, s.truststore_location) if p is not None]

    def maybe_reload(self) -> bool:
        """Rebuild the stores if a source file changed; True if new connections now get new ones.

        A reload that fails (unreadable file, key not matching, a subject change
        that is not allowed...) logs one warning and keeps the current stores; it
        is tried again when the files change again.
        """
        signature = self._signature()
        if signature == self._seen:
            return False
        self._seen = signature
        try:
            stores = self._load()
            self._check_compatible(stores.certificate)
        except Exception as exc:  # ValueError, but a reload must never take the listener down
            reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            log.warning("TLS reload failed, keeping the current certificate and trust store: %s", reason)
            return False
        self._stores = stores
        return True

    def reconfigure(self, settings: TlsSettings, validate_only: bool = False) -> None:
        """Other key and trust stores (a dynamic broker config changed them): loaded and checked as a
        reload's are, including the subject and host name rule; connections accepted afterwards get
        them, and `maybe_reload` watches their files from then on. ValueError (one line) when they
        cannot be used: nothing changes. ``validate_only``: only the checks."""
        old = self.settings
        self.settings = settings
        try:
            stores = self._load()
            self._check_compatible(stores.certificate)
        except Exception as exc:
            self.settings = old
            if isinstance(exc, ValueError):
                raise
            raise ValueError(f"{type(exc).__name__}: {exc}") from None
        if validate_only:
            self.settings = old
            return
        self._stores = stores
        self._seen = self._signature()

    def client_context(self, check_hostname: bool) -> ssl.SSLContext:
        """A client context from the same stores, for this broker reaching the others on the
        listener: its keystore as the client certificate, its truststore to verify them. Made
        once per loaded set of stores: after a reload the next call reads the new files."""
        if self._client_stores is not self._stores:
            self._client_stores, self._client_contexts = self._stores, {}
        context = self._client_contexts.get(check_hostname)
        if context is None:
            context = self._client_contexts[check_hostname] = self._new_client_context(check_hostname)
        return context

    def _new_client_context(self, check_hostname: bool) -> ssl.SSLContext:
        s = self.settings
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = check_hostname
        context.minimum_version, context.maximum_version = self._versions
        _, trusted = _load_stores(context, s)
        if not trusted:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        return context

    # -- internals --------------------------------------------------------------------------------
    def _signature(self) -> tuple[tuple[int, int, int] | None, ...]:
        out: list[tuple[int, int, int] | None] = []
        for path in self.sources:
            try:
                st = os.stat(path)
            except OSError:
                out.append(None)
            else:
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(out)

    def _configure(self, context: ssl.SSLContext) -> None:
        context.verify_mode = self._verify_mode
        context.minimum_version, context.maximum_version = self._versions
        if self._ciphers is not None:
            context.set_ciphers(self._ciphers)

    def _load(self) -> _Stores:
        s = self.settings
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.sslobject_class = AlertingSSLObject
        self._configure(context)
        chain, trusted = _load_stores(context, s)
        if not trusted and self._verify_mode != ssl.CERT_NONE:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return _Stores(context, chain[0])

    def _check_compatible(self, new: x509.Certificate) -> None:
        """Kafka's rule for a keystore replaced while running (SslFactory.CertificateEntries)."""
        old = self._stores.certificate
        if not self._allow_dn_changes and old.subject != new.subject:
            old_dn = subject_dn(old.public_bytes(serialization.Encoding.DER))
            new_dn = subject_dn(new.public_bytes(serialization.Encoding.DER))
            if old_dn.lower() != new_dn.lower():
                raise ValueError(
                    f"the new certificate's subject {new_dn} differs from {old_dn}"
                    " (set ssl.allow.dn.changes=true to allow it)"
                )
        if not self._allow_san_changes:
            missing = _alt_names(old) - _alt_names(new)
            if missing:
                names = ", ".join(sorted(missing))
                raise ValueError(
                    f"the new certificate lacks subject alternative names {names}"
                    " (set ssl.allow.san.changes=true to allow it)"
                )


def _load_stores(context: ssl.SSLContext, s: TlsSettings) -> tuple[list[x509.Certificate], bool]:
    """Load the key store's key and chain, and the trust store's CAs if there is one, into
    ``context``: (the chain, whether a trust store was loaded); ValueError (one line) for either."""
    key, chain = _keystore(s)
    _load_cert_chain(context, key, chain, _keystore_name(s))
    trusted = _truststore(s)
    if trusted is None:
        return chain, False
    pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in trusted)
    try:
        context.load_verify_locations(cadata=pem)
    except ssl.SSLError as exc:
        raise ValueError(f"{_truststore_name(s)}: OpenSSL refused a certificate: {exc}") from None
    return chain, True


def peer_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket, mapper: SslPrincipalMapper) -> str:
    """``User:`` + the mapped subject of the client's verified certificate; ``User:ANONYMOUS`` without one.

    Raises principal_mapping.NoMatchingRule when no mapping rule applies: Kafka
    then fails the connection's authentication, and so should the caller.
    """
    der = ssl_object.getpeercert(binary_form=True)
    if der is None:
        return ANONYMOUS
    return "User:" + mapper.name(subject_dn(der))


# -- settings ----------------------------------------------------------------------------------------


def _verify_mode(value: str) -> ssl.VerifyMode:
    mode = _VERIFY_MODES.get(value.strip().lower())
    if mode is None:
        raise ValueError(f"ssl.client.auth {value!r}: expected none, requested or required")
    return mode


def _boolean(settings: TlsSettings, name: str) -> bool:
    value = getattr(settings, name).strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{TlsSettings.key(name)} {value!r}: expected true or false")
    return value == "true"


def _names(value: str | None) -> list[str]:
    return [n.strip() for n in (value or "").split(",") if n.strip()]


def _versions(protocols: str, ciphers: str | None) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    versions = []
    for name in _names(protocols):
        version = _PROTOCOLS.get(name)
        if version is None:
            raise ValueError(
                f"ssl.enabled.protocols: unsupported protocol {name!r} (expected TLSv1.2, TLSv1.3)"
            )
        versions.append(version)
    if not versions:
        raise ValueError("ssl.enabled.protocols is empty")
    low, high = min(versions), max(versions)
    suites = _names(ciphers)
    if suites and all(s in _TLS13_SUITES for s in suites):
        if high < ssl.TLSVersion.TLSv1_3:
            raise ValueError("ssl.cipher.suites names only TLS 1.3 suites but TLSv1.3 is not enabled")
        low = ssl.TLSVersion.TLSv1_3
    return low, high


def _openssl_ciphers(value: str | None) -> str | None:
    """``ssl.cipher.suites`` as an OpenSSL cipher string for TLS <= 1.2; None: OpenSSL's defaults."""
    names = [n for n in _names(value) if n not in _TLS13_SUITES and n != _SIGNALING_SUITE]
    if not names:
        return None
    ciphers = [_IANA_TO_OPENSSL.get(n, n) for n in names]
    # OpenSSL skips unknown names in a list as long as one is known: check them one by one
    unknown = [name for name, cipher in zip(names, ciphers, strict=True) if not _known_cipher(cipher)]
    if unknown:
        raise ValueError(f"ssl.cipher.suites: unknown to OpenSSL: {', '.join(unknown)} (use OpenSSL's names)")
    return ":".join(ciphers)


def _known_cipher(cipher: str) -> bool:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(cipher)
    except ssl.SSLError:
        return False
    return True


def _check_combinations(s: TlsSettings) -> None:
    """Kafka's rules for which keystore and truststore keys go together (DefaultSslEngineFactory)."""
    for kind in ("keystore", "truststore"):
        store_type = getattr(s, f"{kind}_type").strip().upper()
        if store_type not in ("PEM", "PKCS12"):
            raise ValueError(
                f"ssl.{kind}.type={store_type} is not supported: convert the store to PEM"
                f" (or to PKCS12: keytool -importkeystore -srckeystore <{kind}> -deststoretype PKCS12"
                f" -destkeystore <{kind}>.p12)"
            )
    pem = s.keystore_type.strip().upper() == "PEM"
    if s.keystore_key is not None:
        if not pem:
            raise ValueError(
                f"ssl.keystore.key can be set only with ssl.keystore.type=PEM, not {s.keystore_type}"
            )
        if s.keystore_certificate_chain is None:
            raise ValueError("ssl.keystore.key is set but ssl.keystore.certificate.chain is not")
        if s.keystore_location is not None:
            raise ValueError("both ssl.keystore.location and ssl.keystore.key are set: choose one")
    elif s.keystore_certificate_chain is not None:
        raise ValueError("ssl.keystore.certificate.chain is set but ssl.keystore.key is not")
    elif s.keystore_location is None:
        raise ValueError(
            "a TLS listener needs ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain)"
        )
    if pem and s.keystore_password is not None:
        raise ValueError("ssl.keystore.password cannot be set with PEM key stores, only ssl.key.password")
    if not pem and s.keystore_password is None:
        raise ValueError("ssl.keystore.location is set but ssl.keystore.password is not")
    trust_pem = s.truststore_type.strip().upper() == "PEM"
    if s.truststore_certificates is not None:
        if not trust_pem:
            raise ValueError(
                f"ssl.truststore.certificates can be set only with ssl.truststore.type=PEM, not {s.truststore_type}"
            )
        if s.truststore_location is not None:
            raise ValueError(
                "both ssl.truststore.location and ssl.truststore.certificates are set: choose one"
            )
    if trust_pem and s.truststore_password is not None:
        raise ValueError("ssl.truststore.password cannot be set with PEM trust stores")


# -- stores ------------------------------------------------------------------------------------------


def _keystore_name(s: TlsSettings) -> str:
    return (
        "ssl.keystore.key" if s.keystore_location is None else f"ssl.keystore.location {s.keystore_location}"
    )


def _truststore_name(s: TlsSettings) -> str:
    if s.truststore_location is None:
        return "ssl.truststore.certificates"
    return f"ssl.truststore.location {s.truststore_location}"


def _read(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ValueError(f"{key} {path}: {exc.strerror or exc}") from None


def _pem_blocks(data: bytes, where: str) -> list[tuple[str, bytes]]:
    text = data.decode("ascii", errors="replace")
    blocks = [(m.group(1), m.group(0).encode()) for m in _PEM_BLOCK.finditer(text)]
    if not blocks:
        raise ValueError(
            f"{where}: no PEM content (a JKS or PKCS12 store needs its ssl.*.type set; JKS must be converted)"
        )
    return blocks


def _certificates(blocks: list[tuple[str, bytes]], where: str) -> list[x509.Certificate]:
    certs = []
    for label, block in blocks:
        if label == "CERTIFICATE":
            try:
                certs.append(x509.load_pem_x509_certificate(block))
            except ValueError as exc:
                raise ValueError(f"{where}: a certificate does not parse: {exc}") from None
    if not certs:
        raise ValueError(f"{where}: at least one certificate expected, but none found")
    return certs


def _keystore(s: TlsSettings) -> tuple[PrivateKeyTypes, list[x509.Certificate]]:
    """The private key and its certificate chain (leaf first), checked to belong together."""
    where = _keystore_name(s)
    if s.keystore_type.strip().upper() == "PKCS12":
        assert s.keystore_location is not None and s.keystore_password is not None
        data = _read("ssl.keystore.location", s.keystore_location)
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(data, s.keystore_password.encode())
        except (ValueError, UnsupportedAlgorithm):
            raise ValueError(
                f"{where}: cannot open the PKCS12 store: wrong ssl.keystore.password, or not PKCS12"
                " (a key password other than the store's is not supported)"
            ) from None
        if key is None or cert is None:
            raise ValueError(f"{where}: the PKCS12 store holds no private key with its certificate")
        chain = [cert, *extra]
    else:
        if s.keystore_location is not None:
            key_blocks = chain_blocks = _pem_blocks(
                _read("ssl.keystore.location", s.keystore_location), where
            )
        else:
            assert s.keystore_key is not None and s.keystore_certificate_chain is not None
            key_blocks = _pem_blocks(s.keystore_key.encode(), "ssl.keystore.key")
            chain_blocks = _pem_blocks(
                s.keystore_certificate_chain.encode(), "ssl.keystore.certificate.chain"
            )
            where = "ssl.keystore.certificate.chain"
        key = _private_key(key_blocks, s.key_password, _keystore_name(s))
        chain = _certificates(chain_blocks, where)
    leaf = chain[0]
    if _public_der(key) != leaf.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ):
        raise ValueError(
            f"{where}: the private key does not match the certificate {leaf.subject.rfc4514_string()}"
            " (the chain must start with the key's own certificate)"
        )
    return key, chain


def _private_key(blocks: list[tuple[str, bytes]], password: str | None, where: str) -> PrivateKeyTypes:
    keys = [block for label, block in blocks if label.endswith("PRIVATE KEY")]
    if len(keys) != 1:
        raise ValueError(f"{where}: expected one private key, found {len(keys)}")
    try:
        return serialization.load_pem_private_key(keys[0], None if password is None else password.encode())
    except TypeError:  # cryptography's word for a password given or missing in vain
        if password is None:
            raise ValueError(f"{where}: the private key is encrypted: set ssl.key.password") from None
        raise ValueError(f"{where}: ssl.key.password is set but the private key is not encrypted") from None
    except ValueError:
        raise ValueError(
            f"{where}: cannot decrypt or read the private key (wrong ssl.key.password?)"
            if password is not None
            else f"{where}: cannot read the private key"
        ) from None
    except UnsupportedAlgorithm as exc:
        raise ValueError(f"{where}: unsupported private key: {exc}") from None


def _public_der(key: PrivateKeyTypes) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _load_cert_chain(
    context: ssl.SSLContext, key: PrivateKeyTypes, chain: list[x509.Certificate], where: str
) -> None:
    """Python's ssl loads keys only from files: the key goes through a private temporary file,
    encrypted with a one-time password, so the plain key is never written anywhere."""
    password = secrets.token_urlsafe(24)
    pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain) + key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode()),
    )
    fd, path = tempfile.mkstemp(prefix="minikafka-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        context.load_cert_chain(path, password=password)
    except ssl.SSLError as exc:
        raise ValueError(f"{where}: OpenSSL refused the key or certificate: {exc.reason or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _truststore(s: TlsSettings) -> list[x509.Certificate] | None:
    where = _truststore_name(s)
    if s.truststore_type.strip().upper() == "PKCS12":
        if s.truststore_location is None:
            return None
        data = _read("ssl.truststore.location", s.truststore_location)
        password = None if s.truststore_password is None else s.truststore_password.encode()
        try:
            store = pkcs12.load_pkcs12(data, password)
        except (ValueError, UnsupportedAlgorithm):
            raise ValueError(
                f"{where}: cannot open the PKCS12 store: wrong ssl.truststore.password, or not PKCS12"
            ) from None
        certs = [c.certificate for c in ([store.cert] if store.cert else []) + list(store.additional_certs)]
        if not certs:
            raise ValueError(f"{where}: at least one certificate expected, but none found")
        return certs
    if s.truststore_location is not None:
        return _certificates(
            _pem_blocks(_read("ssl.truststore.location", s.truststore_location), where), where
        )
    if s.truststore_certificates is not None:
        return _certificates(_pem_blocks(s.truststore_certificates.encode(), where), where)
    return None


def _alt_names(cert: x509.Certificate) -> set[str]:
    try:
        extension = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return set()
    return {f"{type(name).__name__}:{name.value}" for name in extension.value}
