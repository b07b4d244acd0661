"""How the bundled client reaches a secured listener: TLS and SASL, from Kafka's client keys.

- ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
- TLS (client/tls.py): ``ssl.ca.location`` (or Java's ``ssl.truststore.location``,
  PEM) to verify the broker, ``ssl.certificate.location`` + ``ssl.key.location``
  (or a PEM ``ssl.keystore.location``) for a client certificate,
  ``ssl.key.password``, ``ssl.endpoint.identification.algorithm`` (``https``:
  the broker's certificate must name the host; empty or ``none``: not checked).
- SASL: ``sasl.mechanism`` (or librdkafka's ``sasl.mechanisms``) PLAIN,
  SCRAM-SHA-256 or SCRAM-SHA-512, with ``sasl.username``/``sasl.password`` or
  Java's ``sasl.jaas.config`` (``... username="u" password="p";``).

`authenticate` runs on a fresh connection after ApiVersions: SaslHandshake v1,
then SaslAuthenticate round trips until the mechanism is done; a refusal is an
`AuthenticationError` carrying the broker's message.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from client.errors import AuthenticationError, ConfigError
from protocol.sasl_client import SaslAuthenticationError, new_client

if TYPE_CHECKING:
    from client.connection import BrokerConnection

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
_JAAS_OPTION = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    ssl_context: ssl.SSLContext | None = None
    check_hostname: bool = True
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def sasl(self) -> bool:
        return self.mechanism is not None

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ClientSecurity:
        """From a client config (client/config.py); `ConfigError` when a needed key is missing."""
        protocol = str(config.get("security.protocol") or "plaintext").upper()
        context = None
        check = str(config.get("ssl.endpoint.identification.algorithm") or "").lower() == "https"
        if protocol in ("SSL", "SASL_SSL"):
            from client.tls import client_context

            try:
                context = client_context(config)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context, check)
        mechanism = str(config.get("sasl.mechanisms") or config.get("sasl.mechanism") or "plain").upper()
        username, password = config.get("sasl.username"), config.get("sasl.password")
        jaas = config.get("sasl.jaas.config")
        if (username is None or password is None) and jaas:
            found = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(jaas)}
            username = username if username is not None else found.get("username")
            password = password if password is not None else found.get("password")
        if username is None or password is None:
            raise ConfigError(
                f"security.protocol {protocol} needs sasl.username and sasl.password (or sasl.jaas.config)"
            )
        return cls(protocol, context, check, mechanism, str(username), str(password))


async def authenticate(conn: BrokerConnection, security: ClientSecurity, timeout: float) -> None:
    """SaslHandshake v1 + SaslAuthenticate on ``conn``; `AuthenticationError` when refused."""
    assert security.mechanism is not None
    answer = await conn.send(SASL_HANDSHAKE, {"mechanism": security.mechanism}, version=1, timeout=timeout)
    if answer.error_code:
        offered = ", ".join(answer.mechanisms) or "none"
        raise AuthenticationError(
            f"{conn.address} does not offer SASL mechanism {security.mechanism} (it offers {offered})"
        )
    try:
        mechanism = new_client(security.mechanism, security.username, security.password)
    except ValueError as exc:
        raise AuthenticationError(f"SASL {security.mechanism}: {exc}") from None
    version = min(conn.broker_versions.get(SASL_AUTHENTICATE, (0, 0))[1], 2)
    token: bytes | None = mechanism.first()
    while token is not None:
        answer = await conn.send(SASL_AUTHENTICATE, {"auth_bytes": token}, version=version, timeout=timeout)
        if answer.error_code:
            raise AuthenticationError(
                f"{conn.address} refused SASL {security.mechanism} authentication of"
                f" {security.username!r}: {answer.error_message or 'no reason given'}"
            )
        try:
            token = mechanism.respond(bytes(answer.auth_bytes))
        except (SaslAuthenticationError, ValueError, RuntimeError) as exc:
            raise AuthenticationError(f"{conn.address}: SASL {security.mechanism}: {exc}") from None
