"""Kafka's server.properties as Kafka reads it: Java properties syntax and listener lists.

Java properties (java.util.Properties.load):

- a logical line may continue over several natural lines: a line ending in an
  odd number of backslashes continues on the next, whose leading blanks are
  dropped;
- blank lines and lines whose first non-blank character is ``#`` or ``!`` are
  comments;
- the key ends at the first unescaped ``=``, ``:`` or blank; blanks, then one
  ``=`` or ``:``, then blanks separate it from the value (``key=value``,
  ``key: value`` and ``key value`` are all valid); a key alone has the value "";
- escapes in keys and values: ``\\t \\n \\r \\f``, ``\\uXXXX``, and ``\\x`` for any
  other character x (so ``\\:`` ``\\=`` ``\\\\`` and ``\\ ``).

Listeners (``listeners``, ``advertised.listeners``): comma-separated
``NAME://host:port`` entries; an empty host means every interface, ``[::1]``
brackets an IPv6 address. `client_listeners` picks the ones minikafka serves:
those that are not controller listeners (``controller.listener.names``), in
the order given, each with its security protocol (``listener.security.protocol.map``,
else the name itself): PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LISTENER = re.compile(r"(?P<name>[A-Za-z0-9_-]+)://(?P<host>\[[^\]]*\]|[^:\[\]]*):(?P<port>\d+)")


class PropertiesError(ValueError):
    """A properties file or a listener list that does not parse; the message says where."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line) pairs, continuations joined, comments and blank lines dropped."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = lineno
            pending = ""
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        out.append((start, pending + line))
        pending = None
    if pending is not None:
        out.append((start, pending))
    return out


def _unescape(text: str, where: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesError(f"{where}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    """{key: value} of a Java properties text (later keys win, as in Java)."""
    out: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        key_end = min(i, len(line))
        j = key_end
        while j < len(line) and line[j] in " \t\f":
            j += 1
        if j < len(line) and line[j] in "=:":
            j += 1
            while j < len(line) and line[j] in " \t\f":
                j += 1
        where = f"{source}:{lineno}"
        key = _unescape(line[:key_end], where)
        if not key:
            raise PropertiesError(f"{where}: a line with no key: {line!r}")
        out[key] = _unescape(line[j:], where)
    return out


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str  # "" means every interface
    port: int


def parse_listeners(value: str, key: str) -> list[Listener]:
    listeners = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        m = _LISTENER.fullmatch(entry)
        if m is None:
            raise PropertiesError(f"{key}: expected NAME://host:port, got {entry!r}")
        listeners.append(Listener(m["name"].upper(), m["host"].strip("[]"), int(m["port"])))
    return listeners


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL[,...]`` -> {NAME: PROTOCOL}."""
    out = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise PropertiesError(f"listener.security.protocol.map: expected NAME:PROTOCOL, got {entry!r}")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def client_listeners(
    listeners: list[Listener], controller_names: set[str], protocols: dict[str, str]
) -> list[tuple[Listener, str]]:
    """The listeners minikafka serves clients on, each with its security protocol (see the module
    docstring); PropertiesError for an unknown protocol or when none is left."""
    served = []
    for listener in listeners:
        if listener.name in controller_names:
            continue
        protocol = protocols.get(listener.name, listener.name)
        if protocol not in SECURITY_PROTOCOLS:
            raise PropertiesError(
                f"listeners: {listener.name} has security protocol {protocol!r}; expected one of"
                f" {', '.join(SECURITY_PROTOCOLS)} (set it in listener.security.protocol.map)"
            )
        served.append((listener, protocol))
    if served:
        return served
    raise PropertiesError("listeners: every listener is a controller listener; minikafka needs a client one")
