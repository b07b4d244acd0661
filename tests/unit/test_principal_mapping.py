"""ssl.principal.mapping.rules and the RFC 2253 subject: Kafka's facts (SslPrincipalMapperTest), and
subjects as Java's X500Principal.getName() printed them (checked with JDK 25 on these certificates)."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from broker.security.principal_mapping import NoMatchingRule, SslPrincipalMapper, subject_dn

KAFKA_RULES = ", ".join(
    [
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]
)


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    SslPrincipalMapper.parse(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ],
)
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ValueError) as info:
        SslPrincipalMapper.parse(rules)
    assert "\n" not in str(info.value) and "ssl.principal.mapping.rules" in str(info.value)


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ("RULE:[a/x/", "bad regex"),
        ("RULE:(?<name>.*)/x/", "bad regex"),  # Java's named group syntax: not Python's
        ("RULE:.*/$1/", "no group 1"),  # no group at all: Kafka fails on the first match
        ("RULE:(.*)/$/", "group index is missing"),
        ("RULE:(.*)/$x/", "illegal group reference"),
        ("RULE:(.*)/${n}/", "no group with name"),
    ],
)
def test_bad_regex_or_replacement_is_refused_when_parsed(rules: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        SslPrincipalMapper.parse(rules)


def test_kafka_mapping_examples() -> None:
    mapper = SslPrincipalMapper.parse(KAFKA_RULES)
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


def test_first_matching_rule_wins_and_default_keeps_the_dn() -> None:
    mapper = SslPrincipalMapper.parse(
        "RULE:^CN=([^,]+),OU=eng.*$/$1/, RULE:^CN=([^,]+),.*$/other-$1/U, DEFAULT"
    )
    assert mapper.name("CN=alice,OU=eng,O=acme,C=US") == "alice"
    assert mapper.name("CN=bob,OU=ops,O=acme") == "OTHER-BOB"
    assert mapper.name("O=acme") == "O=acme"
    assert SslPrincipalMapper.parse("DEFAULT").name("CN=x, O=y") == "CN=x, O=y"


def test_no_rule_applies() -> None:
    mapper = SslPrincipalMapper.parse("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule, match=r"No rules apply to CN=x,OU=Other, rules \[RULE:"):
        mapper.name("CN=x,OU=Other")
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper.parse("").name("CN=x")


def test_comma_with_whitespace() -> None:
    mapper = SslPrincipalMapper.parse("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


@pytest.mark.parametrize(
    ("expected", "rules"),
    [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
        ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
        (
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_splitting(expected: str, rules: str) -> None:
    assert str(SslPrincipalMapper.parse(rules)) == f"SslPrincipalMapper(rules = {expected})"


@pytest.mark.parametrize(
    ("replacement", "dn", "expected"),
    [
        ("$4", "CN=a,O=b", "$4"),  # a group the regex lacks is literal text (Kafka's escaping)
        ("$12", "CN=a,O=b", "a2"),  # cut back to the longest existing group, as Java does
        ("[$0]", "CN=a,O=b", "[CN=a,O=b]"),
        ("\\$1", "CN=a,O=b", "$1"),
        ("a\\b", "CN=a,O=b", "ab"),
    ],
)
def test_java_replacement_syntax(replacement: str, dn: str, expected: str) -> None:
    assert SslPrincipalMapper.parse(f"RULE:^CN=(.*?),.*$/{replacement}/").name(dn) == expected


def test_replacement_applies_to_every_match_like_java_replace_all() -> None:
    assert SslPrincipalMapper.parse("RULE:.*/X/").name("abc") == "XX"  # ".*" also matches "" at the end
    assert (
        SslPrincipalMapper.parse("RULE:^CN=(a)?(.*?),.*$/<$1>/").name("CN=b,O=c") == "<>"
    )  # unmatched group: ""


def test_regex_classes_are_ascii_like_java() -> None:
    mapper = SslPrincipalMapper.parse("RULE:^CN=(\\w+),.*$/$1/, DEFAULT")
    assert mapper.name("CN=abc,O=x") == "abc"
    assert mapper.name("CN=zoë,O=x") == "CN=zoë,O=x"  # Java's \w does not match ë


# -- subject_dn ---------------------------------------------------------------------------------------

_KEY = ec.generate_private_key(ec.SECP256R1())


def _cert(name: x509.Name) -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")]))
        .public_key(_KEY.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(_KEY, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


def _name(*attributes: tuple[x509.ObjectIdentifier, str]) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in attributes])


N = NameOID
# (subject in encoded order, what JDK 25's X500Principal.getName() printed for it)
JAVA_SUBJECTS = [
    (
        _name(
            (N.COUNTRY_NAME, "US"),
            (N.ORGANIZATION_NAME, "acme"),
            (N.ORGANIZATIONAL_UNIT_NAME, "eng"),
            (N.COMMON_NAME, "alice"),
        ),
        "CN=alice,OU=eng,O=acme,C=US",
    ),
    (
        _name(
            (N.DOMAIN_COMPONENT, "com"),
            (N.DOMAIN_COMPONENT, "example"),
            (N.COUNTRY_NAME, "DE"),
            (N.STATE_OR_PROVINCE_NAME, "Berlin"),
            (N.LOCALITY_NAME, "Berlin"),
            (N.STREET_ADDRESS, "Main St 1"),
            (N.ORGANIZATION_NAME, "Acme Inc."),
            (N.ORGANIZATIONAL_UNIT_NAME, "Platform"),
            (N.USER_ID, "u123"),
            (N.COMMON_NAME, "bob"),
        ),
        "CN=bob,UID=u123,OU=Platform,O=Acme Inc.,STREET=Main St 1,L=Berlin,ST=Berlin,C=DE,DC=example,DC=com",
    ),
    (
        _name(
            (N.COMMON_NAME, 'a,b+c=d#e;f"g\\h<i>j'),
            (N.ORGANIZATION_NAME, "#lead"),
            (N.ORGANIZATIONAL_UNIT_NAME, "  two spaces  "),
        ),
        'OU=\\ \\ two spaces\\ \\ ,O=\\#lead,CN=a\\,b\\+c\\=d\\#e\\;f\\"g\\\\h\\<i\\>j',
    ),
    (
        _name((N.COMMON_NAME, "   "), (N.ORGANIZATION_NAME, " x\r"), (N.LOCALITY_NAME, "a\x00b")),
        "L=a\\00b,O=\\ x\\\r,CN=\\ \\ \\ ",
    ),
    (
        _name(
            (N.COMMON_NAME, "carol"),
            (N.EMAIL_ADDRESS, "carol@acme.com"),
            (N.SERIAL_NUMBER, "42"),
            (N.TITLE, "boss"),
            (N.GIVEN_NAME, "Carol"),
        ),
        "2.5.4.42=#0c054361726f6c,2.5.4.12=#0c04626f7373,2.5.4.5=#13023432,"
        "1.2.840.113549.1.9.1=#160e6361726f6c4061636d652e636f6d,CN=carol",
    ),
    (
        x509.Name(
            [
                x509.RelativeDistinguishedName([x509.NameAttribute(N.ORGANIZATION_NAME, "acme")]),
                x509.RelativeDistinguishedName(
                    [
                        x509.NameAttribute(N.COMMON_NAME, "dave"),
                        x509.NameAttribute(N.USER_ID, "d1"),
                        x509.NameAttribute(N.ORGANIZATIONAL_UNIT_NAME, "ops"),
                    ]
                ),
            ]
        ),
        "OU=ops+CN=dave+UID=d1,O=acme",
    ),
    (
        _name((N.COMMON_NAME, "Zoë Ünïcødé 日本"), (N.ORGANIZATION_NAME, "Straße")),
        "O=Straße,CN=Zoë Ünïcødé 日本",
    ),
    (x509.Name([]), ""),
]


@pytest.mark.parametrize(("name", "java"), JAVA_SUBJECTS)
def test_subject_dn_is_what_java_prints(name: x509.Name, java: str) -> None:
    assert subject_dn(_cert(name)) == java


def test_subject_dn_agrees_with_cryptography_for_plain_common_attributes() -> None:
    for name, _ in JAVA_SUBJECTS[:2]:
        assert subject_dn(_cert(name)) == name.rfc4514_string()


def test_subject_dn_of_garbage() -> None:
    with pytest.raises(ValueError):
        subject_dn(b"not a certificate")
