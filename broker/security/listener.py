"""What each listener asks of the clients that come in on it: TLS, SASL, how principals are named.

Kafka's keys, each looked up for listener ``L`` first as ``listener.name.<l>.<key>``
(``l`` lower-cased), then as ``<key>``:

- ``ssl.*`` (broker/security/tls.py): the key and trust stores of SSL and
  SASL_SSL listeners, ``ssl.client.auth``, ``ssl.principal.mapping.rules``.
- ``sasl.enabled.mechanisms``: the mechanisms a SASL listener offers.
- ``sasl.jaas.config`` for mechanism ``M``: ``listener.name.<l>.<m>.sasl.jaas.config``
  (``m`` lower-cased), then ``listener.name.<l>.sasl.jaas.config``, then
  ``sasl.jaas.config``. PLAIN's users are its ``user_<name>="<password>"``
  options; the ``username``/``password`` options are the broker's own login on
  the inter-broker listener.

Mistakes are `ConfigError`s of one line naming the listener and key.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from broker.config import SASL_MECHANISMS, BrokerConfig, ConfigError, ServedListener
from broker.replica.link import LinkSecurity
from broker.security import jaas
from broker.security.principal_mapping import SslPrincipalMapper
from broker.security.tls import ServerTls, TlsSettings

ANONYMOUS = "User:ANONYMOUS"


@dataclass
class ListenerSecurity:
    """One listener's security: its protocol, TLS context, SASL mechanisms and PLAIN users."""

    name: str
    protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    tls: ServerTls | None = None
    mapper: SslPrincipalMapper | None = None
    mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = field(default_factory=dict, repr=False)
    oauth_options: dict[str, str] = field(default_factory=dict)  # OAuthBearerLoginModule's options
    # mechanism -> (username, password): the broker's own login, from that mechanism's JAAS options
    logins: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def _lookup(config: BrokerConfig, listener: str, key: str) -> str | None:
    values = config.security_values
    scoped = f"listener.name.{listener.lower()}.{key}"
    if scoped in values:
        return values[scoped]
    if key in values:
        return values[key]
    if key in config.values and config.sources.get(key) != "default":
        return str(config.values[key])
    return None


def scoped_lookup(values: Mapping[str, str], listener: str) -> Callable[[str], str | None]:
    """``key -> value`` for ``listener`` over explicit ``values``: ``listener.name.<l>.<key>`` first."""
    prefix = f"listener.name.{listener.lower()}."

    def get(key: str) -> str | None:
        found = values.get(prefix + key)
        return found if found is not None else values.get(key)

    return get


def listener_security(config: BrokerConfig, listener: ServedListener) -> ListenerSecurity:
    """The security of ``listener`` from ``config``; `ConfigError` when something is missing or wrong."""
    name, protocol = listener.name, listener.protocol
    out = ListenerSecurity(name, protocol)
    if out.ssl:
        try:
            settings = TlsSettings.from_lookup(lambda key: _lookup(config, name, key))
            out.tls = ServerTls(settings)
            rules = _lookup(config, name, "ssl.principal.mapping.rules") or "DEFAULT"
            out.mapper = SslPrincipalMapper.parse(rules)
        except ValueError as exc:
            raise ConfigError(f"listener {name} ({protocol}): {exc}") from None
    if out.sasl:
        raw = _lookup(config, name, "sasl.enabled.mechanisms")
        mechanisms = str(config["sasl.enabled.mechanisms"]) if raw is None else raw
        out.mechanisms = tuple(m.strip().upper() for m in mechanisms.split(",") if m.strip())
        unknown = [m for m in out.mechanisms if m not in SASL_MECHANISMS]
        if unknown or not out.mechanisms:
            raise ConfigError(
                f"listener {name}: sasl.enabled.mechanisms {mechanisms!r}: minikafka supports"
                f" {', '.join(SASL_MECHANISMS)}"
            )
        for mechanism in out.mechanisms:
            entry = _jaas(config, name, mechanism)
            if entry is None:
                if mechanism == "PLAIN":
                    raise ConfigError(
                        f"listener {name} offers PLAIN but has no users: set"
                        f" listener.name.{name.lower()}.plain.sasl.jaas.config to Kafka's"
                        ' PlainLoginModule with user_<name>="<password>" options'
                    )
                continue
            if mechanism == "PLAIN":
                out.plain_users = jaas.plain_users(entry)
            if mechanism == "OAUTHBEARER":
                out.oauth_options = {k: v for k, v in entry.options.items() if k.startswith("unsecured")}
            if "username" in entry.options and "password" in entry.options:
                out.logins[mechanism] = (entry.options["username"], entry.options["password"])
    return out


def link_security(config: BrokerConfig, security: ListenerSecurity) -> LinkSecurity | None:
    """How this broker reaches the others on ``security``'s listener (the inter-broker one), or
    None for PLAINTEXT. TLS: this listener's key and trust stores, the host name checked unless
    ``ssl.endpoint.identification.algorithm`` is empty. SASL: ``sasl.mechanism.inter.broker.protocol``
    with the ``username``/``password`` options of that mechanism's JAAS config."""
    if security.protocol == "PLAINTEXT":
        return None
    context: Callable[[], ssl.SSLContext] | None = None
    check = True
    tls = security.tls
    if tls is not None:
        algorithm = _lookup(config, security.name, "ssl.endpoint.identification.algorithm")
        check = (algorithm if algorithm is not None else "https").strip().lower() == "https"
        tls.client_context(check)  # a store that cannot be used fails the broker's start, not a link
        context = functools.partial(tls.client_context, check)
    if not security.sasl:
        return LinkSecurity(context, check)
    mechanism = str(config["sasl.mechanism.inter.broker.protocol"])
    name = security.name
    if mechanism not in security.mechanisms:
        raise ConfigError(
            f"sasl.mechanism.inter.broker.protocol {mechanism} is not enabled on the inter-broker listener"
            f" {name} ({', '.join(security.mechanisms)})"
        )
    login = security.logins.get(mechanism)
    if login is None:
        raise ConfigError(
            f"inter-broker listener {name} uses SASL {mechanism}: set username and password (the"
            f" broker's own login) in listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
        )
    return LinkSecurity(context, check, mechanism, *login)


def _jaas(config: BrokerConfig, listener: str, mechanism: str) -> jaas.JaasEntry | None:
    values = config.security_values
    prefix = f"listener.name.{listener.lower()}."
    for key in (
        f"{prefix}{mechanism.lower()}.sasl.jaas.config",
        f"{prefix}sasl.jaas.config",
        "sasl.jaas.config",
    ):
        if key in values:
            try:
                return jaas.parse(values[key])
            except ValueError as exc:
                raise ConfigError(f"{key}: {exc}") from None
    return None
