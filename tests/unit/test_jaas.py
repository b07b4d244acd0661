"""Kafka's sasl.jaas.config syntax: one login module, its control flag and options."""

from __future__ import annotations

import pytest

from broker.security.jaas import JaasEntry, parse, plain_users

PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)


def test_plain_module() -> None:
    entry = parse(PLAIN)
    assert entry == JaasEntry(
        "org.apache.kafka.common.security.plain.PlainLoginModule",
        "required",
        {
            "username": "admin",
            "password": "admin-secret",
            "user_admin": "admin-secret",
            "user_alice": "alice-secret",
        },
    )
    assert plain_users(entry) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_scram_module() -> None:
    entry = parse(
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="x";'
    )
    assert entry.login_module == "org.apache.kafka.common.security.scram.ScramLoginModule"
    assert entry.options == {"username": "admin", "password": "x"}
    assert plain_users(entry) == {}  # only PlainLoginModule's user_ options are PLAIN's users


def test_scram_module_user_options_are_not_plain_users() -> None:
    entry = parse('org.apache.kafka.common.security.scram.ScramLoginModule required user_bob="pw";')
    assert plain_users(entry) == {}


@pytest.mark.parametrize("flag", ["required", "requisite", "sufficient", "optional", "REQUIRED", "Optional"])
def test_control_flags(flag: str) -> None:
    assert parse(f"a.B {flag};").control_flag == flag.lower()


def test_no_options() -> None:
    assert parse("a.B required;") == JaasEntry("a.B", "required", {})


def test_layout_and_comments() -> None:
    text = """
        // the broker's users
        org.apache.kafka.common.security.plain.PlainLoginModule   required
            /* inter-broker */ username = "admin"
            password="admin-secret"
            user_admin="admin-secret";   // trailing comment
    """
    entry = parse(text)
    assert entry.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"plain"', "plain"),
        ('""', ""),
        ("'single quoted'", "single quoted"),
        ('"with \\"quotes\\" inside"', 'with "quotes" inside'),
        ('"back\\\\slash"', "back\\slash"),
        ('"tab\\there"', "tab\there"),
        ('"new\\nline"', "new\nline"),
        ('"octal\\101\\0"', "octalA\0"),
        ('"other \\q escape"', "other q escape"),
        ('"semi;colon = and // not a comment"', "semi;colon = and // not a comment"),
        ('"ünïcödé"', "ünïcödé"),
        ("unquoted", "unquoted"),
        ("with.dots-and_under$", "with.dots-and_under$"),
        ("4096", "4096"),
    ],
)
def test_values(value: str, expected: str) -> None:
    assert parse(f"a.B required key={value};").options == {"key": expected}


def test_repeated_option_keeps_last_value() -> None:
    assert parse('a.B required k="1" k="2";').options == {"k": "2"}


def test_plain_users_edge_cases() -> None:
    entry = parse(
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'user_="nobody" user_a.b="dotted" user_user_x="double" USER_y="case" username="admin";'
    )
    assert plain_users(entry) == {"a.b": "dotted", "user_x": "double"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "JAAS config property does not contain any login modules"),
        ("   // only a comment", "JAAS config property does not contain any login modules"),
        ("a.B", "Login module control flag not specified in JAAS config"),
        ("a.B mandatory;", "Invalid login module control flag 'mandatory' in JAAS config (column 5)"),
        ('a.B "required";', "Invalid login module control flag a quoted value in JAAS config (column 5)"),
        ("a.B required", "JAAS config entry not terminated by semi-colon"),
        ('a.B required k="v"', "JAAS config entry not terminated by semi-colon"),
        ("a.B required k;", "Value not specified for key 'k' in JAAS config (column 14)"),
        ("a.B required k=;", "Value not specified for key 'k'"),
        ("a.B required k=", "Value not specified for key 'k'"),
        ("a.B required k", "Value not specified for key 'k'"),
        ('a.B required k "v";', "Value not specified for key 'k'"),
        ('a.B required "k"="v";', "expected an option name in JAAS config, got a quoted value (column 14)"),
        ("a.B required =v;", "expected an option name in JAAS config, got '='"),
        (
            '"a.B" required;',
            "expected a login module class name in JAAS config, got a quoted value (column 1)",
        ),
        ("; a.B required;", "expected a login module class name in JAAS config, got ';' (column 1)"),
        ('a.B required k="v;', "unterminated quoted value in JAAS config (column 16)"),
        ('a.B required k="v\n";', "unterminated quoted value"),
        ("a.B required /* k=v;", "unterminated /* comment"),
        ("a.B required k=v, j=w;", "unexpected character ',' in JAAS config (column 17)"),
        ("a.B required k=@;", "unexpected character '@'"),
        ("a.B required; c.D optional;", "JAAS config property contains 2 login modules, should be 1 module"),
    ],
)
def test_errors(text: str, words: str) -> None:
    with pytest.raises(ValueError) as err:
        parse(text)
    assert words in str(err.value)
    assert "\n" not in str(err.value)
