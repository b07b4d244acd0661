"""Kafka's ``sasl.jaas.config`` value: one JAAS login module entry.

Grammar (Kafka's JaasConfig, a java.io.StreamTokenizer over the value)::

    entry   = module flag option* ";"
    module  = word                     e.g. org.apache.kafka.common.security.plain.PlainLoginModule
    flag    = required | requisite | sufficient | optional   (any case)
    option  = word "=" (word | quoted)
    word    = run of letters, digits and . - _ $ (and characters >= U+00A0)
    quoted  = "..." or '...'; backslash escapes \\n \\t \\r \\b \\f \\a \\v, \\ooo (octal),
              else \\c is c; a quoted value may not span lines

Whitespace separates tokens; ``// ...`` and ``/* ... */`` are comments. Kafka
allows exactly one entry in ``sasl.jaas.config``. A repeated option keeps its
last value, as Kafka's map does. Unlike Kafka's tokenizer, an unquoted value
may start with a digit (Kafka reads ``123`` as a number and then reports the
value as missing).

Errors are ValueError with one line naming the problem and its column, e.g.
``Value not specified for key 'password' in JAAS config (column 57)``.
"""

from __future__ import annotations

from dataclasses import dataclass

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
_USER_PREFIX = "user_"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    control_flag: str  # lower case, one of CONTROL_FLAGS
    options: dict[str, str]


def _is_word_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in ".-_$") or ord(c) >= 0xA0


# Token kinds: "word", "quoted", or the character itself for "=" and ";".
_Token = tuple[str, str, int]  # (kind, text, column)


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError(f"unterminated /* comment in JAAS config (column {i + 1})")
            i = end + 2
        elif c in "=;":
            out.append((c, c, i + 1))
            i += 1
        elif c in "\"'":
            value, end = _quoted(text, i)
            out.append(("quoted", value, i + 1))
            i = end
        elif _is_word_char(c):
            start = i
            while i < n and _is_word_char(text[i]):
                i += 1
            out.append(("word", text[start:i], start + 1))
        else:
            raise ValueError(f"unexpected character {c!r} in JAAS config (column {i + 1})")
    return out


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The value of the quoted string at ``start`` and the index after its closing quote."""
    quote, i, out = text[start], start + 1, []
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c in "\r\n":
            break
        if c == "\\" and i + 1 < len(text):
            i += 1
            c = text[i]
            if c in "01234567":
                digits = c
                while len(digits) < 3 and i + 1 < len(text) and text[i + 1] in "01234567":
                    i += 1
                    digits += text[i]
                c = chr(int(digits, 8) & 0xFF)
            else:
                c = _ESCAPES.get(c, c)
        out.append(c)
        i += 1
    raise ValueError(f"unterminated quoted value in JAAS config (column {start + 1})")


def parse(text: str) -> JaasEntry:
    """The single login module entry in ``text``; ValueError (one line) when malformed."""
    tokens = _tokens(text)
    if not tokens:
        raise ValueError("JAAS config property does not contain any login modules")
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        entry, i = _entry(tokens, i)
        entries.append(entry)
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def _shown(token: _Token) -> str:
    """A token for an error message; a quoted value may be a password, so it is not repeated."""
    return "a quoted value" if token[0] == "quoted" else repr(token[1])


def _entry(tokens: list[_Token], i: int) -> tuple[JaasEntry, int]:
    kind, module, column = tokens[i]
    if kind != "word":
        raise ValueError(
            f"expected a login module class name in JAAS config, got {_shown(tokens[i])} (column {column})"
        )
    i += 1
    if i == len(tokens):
        raise ValueError(f"Login module control flag not specified in JAAS config (after {module!r})")
    kind, flag, column = tokens[i]
    if kind != "word" or flag.lower() not in CONTROL_FLAGS:
        raise ValueError(
            f"Invalid login module control flag {_shown(tokens[i])} in JAAS config (column {column})"
        )
    i += 1
    options: dict[str, str] = {}
    while i < len(tokens) and tokens[i][0] != ";":
        kind, key, column = tokens[i]
        if kind != "word":
            raise ValueError(
                f"expected an option name in JAAS config, got {_shown(tokens[i])} (column {column})"
            )
        if i + 2 >= len(tokens) or tokens[i + 1][0] != "=" or tokens[i + 2][0] not in ("word", "quoted"):
            raise ValueError(f"Value not specified for key '{key}' in JAAS config (column {column})")
        options[key] = tokens[i + 2][1]
        i += 3
    if i == len(tokens):
        raise ValueError("JAAS config entry not terminated by semi-colon (at the end of the value)")
    return JaasEntry(module, flag.lower(), options), i + 1


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """PLAIN's users (name -> password) from the ``user_<name>`` options of a PlainLoginModule entry;
    {} for any other login module, as Kafka's PLAIN callback reads only PlainLoginModule's options."""
    if entry.login_module != PLAIN_LOGIN_MODULE:
        return {}
    return {
        key[len(_USER_PREFIX) :]: value
        for key, value in entry.options.items()
        if key.startswith(_USER_PREFIX) and len(key) > len(_USER_PREFIX)
    }
