"""The bundled client's TLS context, from librdkafka's and the Java client's ``ssl.*`` keys.

`client_context(config)` reads, from a client config (None or absent: not set):

- ``ssl.ca.location`` (librdkafka: a PEM file, a directory of hashed CA files,
  or ``probe``) and/or ``ssl.truststore.location`` (Java's name; PEM here): the
  CAs the broker's certificate must chain to. Neither: the system's CAs.
- ``ssl.certificate.location`` + ``ssl.key.location`` (librdkafka; without a key
  file the key is looked for in the certificate file), or
  ``ssl.keystore.location`` (Java's name; one PEM file with the key and the
  chain): the client's own certificate, for brokers with ``ssl.client.auth``.
- ``ssl.key.password``: the password of an encrypted key. An encrypted key
  without it is an error (OpenSSL would otherwise prompt on the terminal).
- ``ssl.endpoint.identification.algorithm``: ``https`` (the default): the
  broker's certificate must name the host connected to; ``none`` or empty: it
  is not checked (the certificate is still verified against the CAs). The
  caller passes ``server_hostname`` only when `check_hostname` says so.

Mistakes are ValueErrors of one line naming the key and the file.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any

__all__ = ["check_hostname", "client_context"]


def check_hostname(config: Mapping[str, Any]) -> bool:
    """Whether ``ssl.endpoint.identification.algorithm`` asks for the broker's name to be checked."""
    value = config.get("ssl.endpoint.identification.algorithm", "https")
    algorithm = str(value or "").strip().lower()
    if algorithm not in ("https", "none", ""):
        raise ValueError(f"ssl.endpoint.identification.algorithm {value!r}: expected https, none or empty")
    return algorithm == "https"


def client_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """An SSLContext for connecting to brokers as ``config`` says."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = check_hostname(config)
    _load_trust(context, config)
    _load_own_certificate(context, config)
    return context


def _get(config: Mapping[str, Any], key: str) -> str | None:
    value = config.get(key)
    return None if value is None or str(value).strip() == "" else str(value).strip()


def _load_trust(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    locations = [(k, v) for k in ("ssl.ca.location", "ssl.truststore.location") if (v := _get(config, k))]
    if not locations or any(v == "probe" for _, v in locations):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    for key, path in locations:
        if path == "probe":
            continue
        try:
            if os.path.isdir(path):
                context.load_verify_locations(capath=path)
            else:
                context.load_verify_locations(cafile=path)
        except OSError as exc:  # ssl.SSLError included
            raise ValueError(f"{key} {path}: {_reason(exc, 'no CA certificate in it')}") from None


def _load_own_certificate(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    cert, key = _get(config, "ssl.certificate.location"), _get(config, "ssl.key.location")
    keystore = _get(config, "ssl.keystore.location")
    password = _get(config, "ssl.key.password")
    if keystore is not None and (cert is not None or key is not None):
        raise ValueError("set ssl.keystore.location or ssl.certificate.location + ssl.key.location, not both")
    if key is not None and cert is None:
        raise ValueError("ssl.key.location is set but ssl.certificate.location is not")
    if keystore is not None:
        where, certfile, keyfile = f"ssl.keystore.location {keystore}", keystore, None
    elif cert is not None:
        where, certfile, keyfile = f"ssl.certificate.location {cert}", cert, key
        if key is not None:
            where += f" with ssl.key.location {key}"
    else:
        return
    for path_key, path in (
        ("ssl.keystore.location", keystore),
        ("ssl.certificate.location", cert),
        ("ssl.key.location", key),
    ):
        if path is not None and not os.path.isfile(path):
            raise ValueError(f"{path_key} {path}: no such file")

    def no_password() -> str:
        raise ValueError(f"{where}: the private key is encrypted: set ssl.key.password")

    try:
        context.load_cert_chain(certfile, keyfile, password if password is not None else no_password)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(f"{where}: the private key does not match the certificate") from None
        if password is not None:
            raise ValueError(
                f"{where}: cannot load the key or certificate (wrong ssl.key.password?)"
            ) from None
        raise ValueError(f"{where}: cannot load the key or certificate: {_reason(exc, 'not PEM')}") from None
    except OSError as exc:
        raise ValueError(f"{where}: {_reason(exc, 'unreadable')}") from None


def _reason(exc: OSError, fallback: str) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason.lower().replace("_", " ") if exc.reason else fallback
    return exc.strerror or fallback
