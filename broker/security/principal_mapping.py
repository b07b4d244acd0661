"""``ssl.principal.mapping.rules``: a TLS client certificate's subject to a Kafka user name.

Rules (Kafka's grammar, SslPrincipalMapper): a comma-separated list, evaluated in
order, of

- ``DEFAULT``: the distinguished name unchanged;
- ``RULE:<regex>/<replacement>/[L|U]``: when ``regex`` matches the *whole* DN,
  the DN with every match of ``regex`` replaced by ``replacement`` (Java's
  ``replaceAll``: ``$1``-style group references, ``\\`` escapes the next
  character), then lower-cased (``L``) or upper-cased (``U``). Inside regex and
  replacement, ``\\/`` stands for ``/``. A ``$N`` naming a group the regex does
  not have is kept as the literal text ``$N`` (Kafka's rule).

The first rule that yields a name wins; none yielding one raises `NoMatchingRule`
(Kafka then fails the connection's authentication). Whitespace around rules and
empty entries (``,,``) are ignored; ``rules`` of "" means no rule at all (every
DN then fails), while Kafka's default for the setting is ``DEFAULT``.

Deviations from Kafka, both deliberate:
- Regexes are Python's `re` (with re.ASCII: Java's ``\\w``, ``\\d``, ``\\s`` and
  ``(?i)`` are ASCII-only too), not java.util.regex: the usual syntax is the same,
  but Java-only constructs (``(?<name>...)`` groups, ``\\p{Lower}``-style classes,
  class intersections ``[a-z&&[^d]]``) are rejected when the rules are parsed.
  ``${name}`` in a replacement refers to a Python ``(?P<name>...)`` group.
- A replacement that Java would refuse on its first use (a trailing ``$``,
  ``$x``, ``${missing}``, ``$1`` without groups) is rejected when the rules are
  parsed, not when a client with a matching certificate connects.

`subject_dn` gives the DN these rules see: Java's ``X500Principal.getName()``
(RFC 2253) of the certificate's subject, which is also Kafka's ``DEFAULT``
principal name. It reads the subject's DER itself rather than using
cryptography's ``Name.rfc4514_string()``, which agrees for plain values of CN,
OU, O, L, ST, C, STREET, DC and UID but differs from Java in that

- Java escapes ``=`` and ``#`` anywhere in a value, and every leading and
  trailing space (and ``\\r``); cryptography escapes ``#`` only in front, and
  only the first leading and the last trailing space;
- for any other attribute (emailAddress, serialNumber, title...) Java prints
  the dotted OID and ``#`` + the hex of the value's whole DER encoding
  (``1.2.840.113549.1.9.1=#1611...``); cryptography prints the decoded text;
- Java decodes PrintableString, IA5String, T61String and GeneralString as
  ISO-8859-1 and BMPString as UTF-16 (what current JDKs do; JDK 17 decodes every
  string type as UTF-8, which differs only for non-ASCII in non-UTF8 types).

Both parts were checked against Java: the mapper against Kafka's own
SslPrincipalMapper on several hundred rule/DN pairs (equal apart from the
deviations above), `subject_dn` against JDK 25 (tests/unit/test_principal_mapping.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509

__all__ = ["NoMatchingRule", "SslPrincipalMapper", "subject_dn"]

# Kafka's RULE_PATTERN, group for group: 1 DEFAULT, 2 regex, 4 replacement, 6 case flag, 7 anything else.
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
# re.ASCII: Java's \s is [ \t\n\x0B\f\r], not Unicode whitespace.
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)", re.ASCII)
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim() drops every char <= U+0020


class NoMatchingRule(LookupError):
    """No rule yields a name for this DN (Kafka's SslPrincipalMapper.NoMatchingRule)."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    parts: tuple[str | int, ...] = ()  # the replacement compiled: literal text or a group number
    case: str = ""  # "", "L" or "U"

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self._expand, dn)
        if self.case == "L":
            return name.lower()
        return name.upper() if self.case == "U" else name

    def _expand(self, match: re.Match[str]) -> str:
        return "".join(part if isinstance(part, str) else match.group(part) or "" for part in self.parts)

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (f"/{self.case}" if self.case else "")


class SslPrincipalMapper:
    """Parsed ``ssl.principal.mapping.rules``; `name` maps one DN."""

    def __init__(self, rules: list[_Rule]) -> None:
        self._rules = rules

    @classmethod
    def parse(cls, rules: str) -> SslPrincipalMapper:
        """Parse the setting's value; ValueError (one line) for a malformed rule or regex."""
        parsed: list[_Rule] = []
        for match in _SPLITTER.finditer(rules.strip(_JAVA_TRIMMED)):
            text = match.group(1)
            rule = _PARSER.match(text)
            assert rule is not None  # the last alternative matches anything, even ""
            if rule.end() != len(text):
                raise ValueError(
                    f"ssl.principal.mapping.rules: invalid rule `{text}`, unmatched substring: `{text[rule.end() :]}`"
                )
            if rule.group(1) is not None:
                parsed.append(_Rule(None))
            elif rule.group(2) is not None:
                parsed.append(_compile_rule(text, rule.group(2), rule.group(4), rule.group(6)))
            # else: an empty entry, ignored as Kafka does
        return cls(parsed)

    def name(self, dn: str) -> str:
        """The short name of ``dn`` by the first rule that applies; `NoMatchingRule` if none does."""
        for rule in self._rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}, rules [{', '.join(map(str, self._rules))}]")

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(map(str, self._rules))}])"

    __repr__ = __str__


def _compile_rule(text: str, regex: str, replacement: str, case: str) -> _Rule:
    try:
        pattern = re.compile(regex, re.ASCII)  # Java's \w, \d, \s, \b and (?i) are ASCII-only too
    except re.error as e:
        raise ValueError(f"ssl.principal.mapping.rules: bad regex in rule `{text}`: {e}") from None
    escaped = _escape_literal_back_references(replacement, pattern.groups)
    try:
        parts = _compile_replacement(escaped, pattern)
    except ValueError as e:
        raise ValueError(f"ssl.principal.mapping.rules: bad replacement in rule `{text}`: {e}") from None
    return _Rule(pattern, replacement, parts, case)


def _escape_literal_back_references(replacement: str, groups: int) -> str:
    """Kafka's escapeLiteralBackReferences: ``$N`` beyond the regex's groups becomes ``\\$N``.

    ``$N`` is first cut back to a group that exists (``$12`` with one group is
    ``$1`` then ``2``), as Java's replacement parser does. Offsets come from the
    unmodified text while insertions shift the modified one, as in Kafka, so
    two escaped references in one replacement come out as Kafka's do.
    """
    if groups == 0:
        return replacement
    value = replacement
    for ref in _BACK_REFERENCE.finditer(replacement):
        digits = ref.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        if index > groups:
            start = ref.start(1)
            value = value[: start - 1] + "\\" + value[start - 1 :]
    return value


def _compile_replacement(replacement: str, pattern: re.Pattern[str]) -> tuple[str | int, ...]:
    """Java's Matcher.appendReplacement syntax, resolved against ``pattern``'s groups."""
    parts: list[str | int] = []
    literal: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 == n:
                raise ValueError("character to be escaped is missing")
            literal.append(replacement[i + 1])
            i += 2
            continue
        if c != "$":
            literal.append(c)
            i += 1
            continue
        i += 1
        if i == n:
            raise ValueError("illegal group reference: group index is missing")
        if replacement[i] == "{":
            end = i + 1
            while end < n and replacement[end].isascii() and replacement[end].isalnum():
                end += 1
            name = replacement[i + 1 : end]
            if not name:
                raise ValueError("named capturing group has 0 length name")
            if end == n or replacement[end] != "}":
                raise ValueError("named capturing group is missing trailing '}'")
            if name[0].isdigit() or name not in pattern.groupindex:
                raise ValueError(f"no group with name {{{name}}}")
            group = pattern.groupindex[name]
            i = end + 1
        else:
            if replacement[i] not in "0123456789":
                raise ValueError("illegal group reference")
            group = int(replacement[i])
            i += 1
            # the longest number that still names an existing group
            while (
                i < n
                and replacement[i] in "0123456789"
                and group * 10 + int(replacement[i]) <= pattern.groups
            ):
                group = group * 10 + int(replacement[i])
                i += 1
            if group > pattern.groups:
                raise ValueError(f"no group {group}")
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append(group)
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


# --- the certificate's subject, as Java's X500Principal.getName() prints it -------------------------------

# The attribute types RFC 2253 names (Java's AVAKeyword table, RFC 2253-compliant entries).
_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
}
# DER tag -> codec for the string types Java prints as text (AVA.isDerString, non-canonical).
_STRING_TAGS = {
    0x0C: "utf-8",  # UTF8String
    0x13: "latin-1",  # PrintableString
    0x14: "latin-1",  # T61String
    0x16: "latin-1",  # IA5String
    0x1B: "latin-1",  # GeneralString
    0x1E: "utf-16-be",  # BMPString
}
_ESCAPED = ',=+<>#;"\\'


def subject_dn(der_cert: bytes) -> str:
    """The RFC 2253 subject of a DER certificate as Java prints it, e.g. ``CN=alice,OU=eng,O=acme,C=US``.

    RDNs come last-first, multi-valued RDNs are joined by ``+`` in their encoded
    order. ValueError if ``der_cert`` is not a certificate.
    """
    tbs = x509.load_der_x509_certificate(der_cert).tbs_certificate_bytes
    _, start, end, _ = _tlv(tbs, 0)
    fields = []
    pos = start
    while pos < end:
        tag, _, _, pos_next = _tlv(tbs, pos)
        fields.append((tag, pos))
        pos = pos_next
    # TBSCertificate: [0] version (optional), serialNumber, signature, issuer, validity, subject, ...
    skip = 1 if fields and fields[0][0] == 0xA0 else 0
    subject_at = fields[skip + 4][1]
    _, start, end, _ = _tlv(tbs, subject_at)
    rdns = []
    pos = start
    while pos < end:  # RDNSequence: SEQUENCE OF SET OF AttributeTypeAndValue
        _, set_start, set_end, pos = _tlv(tbs, pos)
        avas = []
        while set_start < set_end:
            _, ava_start, _, set_start = _tlv(tbs, set_start)
            _, oid_start, oid_end, value_at = _tlv(tbs, ava_start)
            avas.append(_ava(_oid(tbs[oid_start:oid_end]), tbs, value_at))
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


def _ava(oid: str, data: bytes, value_at: int) -> str:
    tag, start, end, after = _tlv(data, value_at)
    keyword = _KEYWORDS.get(oid)
    codec = _STRING_TAGS.get(tag)
    if keyword is None or codec is None:
        return f"{keyword or oid}=#{data[value_at:after].hex()}"
    text = data[start:end].decode(codec, errors="replace")
    out = "".join("\\00" if c == "\0" else "\\" + c if c in _ESCAPED else c for c in text)
    lead = len(out) - len(out.lstrip(" \r"))
    trail = len(out.rstrip(" \r"))
    return f"{keyword}=" + "".join("\\" + c if i < lead or i >= trail else c for i, c in enumerate(out))


def _tlv(data: bytes, pos: int) -> tuple[int, int, int, int]:
    """(first tag byte, content start, content end, next position) of the DER element at ``pos``."""
    try:
        tag = data[pos]
        pos += 1
        if tag & 0x1F == 0x1F:  # high tag number: base-128 continuation bytes
            while data[pos] & 0x80:
                pos += 1
            pos += 1
        length = data[pos]
        pos += 1
        if length & 0x80:
            count = length & 0x7F
            if count == 0:
                raise ValueError("indefinite length in DER")
            length = int.from_bytes(data[pos : pos + count], "big")
            pos += count
    except IndexError:
        raise ValueError("truncated DER") from None
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length, pos + length


def _oid(content: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = value << 7 | byte & 0x7F
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs:
        raise ValueError("empty OID in DER")
    first = min(arcs[0] // 40, 2)
    return ".".join(map(str, [first, arcs[0] - 40 * first, *arcs[1:]]))
