"""SASL/PLAIN's server (Kafka's PlainSaslServer behaviour and messages) and the mechanism factory."""

from __future__ import annotations

import pytest

from broker.security import scram
from broker.security.mechanisms import SUPPORTED, SaslAuthenticationError, new_server
from broker.security.plain import MAX_MESSAGE_SIZE, PlainServer
from broker.security.scram import ScramServer
from protocol.sasl_client import PlainClient

USERS = {"admin": "admin-secret", "alice": "alice-secret", "jürgen": "pässwörd"}
INVALID = "Authentication failed: Invalid username or password"


def step(token: bytes) -> PlainServer:
    server = PlainServer(USERS)
    assert server.step(token) == b""
    return server


@pytest.mark.parametrize(
    ("token", "user"),
    [
        (b"\0alice\0alice-secret", "alice"),
        (b"alice\0alice\0alice-secret", "alice"),  # an authzid equal to the username
        ("\0jürgen\0pässwörd".encode(), "jürgen"),
    ],
)
def test_success(token: bytes, user: str) -> None:
    server = step(token)
    assert server.complete and server.username == user and server.mechanism == "PLAIN"


def test_bundled_client_token() -> None:
    client = PlainClient("admin", "admin-secret")
    token = client.first()
    assert token == b"\0admin\0admin-secret"
    assert step(token).username == "admin"


@pytest.mark.parametrize("token", [b"\0alice\0wrong", b"\0mallory\0alice-secret", b"\0Alice\0alice-secret",
                                   b"\0alice\0alice-secret ", b"\0alice\0alice-secre"])  # fmt: skip
def test_unknown_user_and_wrong_password_look_the_same(token: bytes) -> None:
    server = PlainServer(USERS)
    with pytest.raises(SaslAuthenticationError) as err:
        server.step(token)
    assert str(err.value) == INVALID
    assert not server.complete and server.username is None


def test_authzid_different_from_username() -> None:
    with pytest.raises(SaslAuthenticationError) as err:
        PlainServer(USERS).step(b"admin\0alice\0alice-secret")
    assert str(err.value) == (
        "Authentication failed: Client requested an authorization id that is different from username"
    )


def test_password_is_checked_before_authzid() -> None:
    # Kafka's order: a wrong password is reported as such, whatever authzid was asked for.
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        PlainServer(USERS).step(b"admin\0alice\0wrong")


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\0alice\0alice-secret\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\0\0alice-secret", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"\0alice\0\xff", "Invalid SASL/PLAIN response: not UTF-8"),
        (
            b"\0alice\0" + b"x" * MAX_MESSAGE_SIZE,
            f"Invalid SASL/PLAIN response: longer than {MAX_MESSAGE_SIZE} bytes",
        ),
    ],
)
def test_malformed(token: bytes, message: str) -> None:
    with pytest.raises(SaslAuthenticationError) as err:
        PlainServer(USERS).step(token)
    assert str(err.value) == message


def test_one_step_only() -> None:
    server = step(b"\0alice\0alice-secret")
    with pytest.raises(SaslAuthenticationError, match="Unexpected challenge in Sasl server state COMPLETE"):
        server.step(b"\0alice\0alice-secret")
    failed = PlainServer(USERS)
    with pytest.raises(SaslAuthenticationError):
        failed.step(b"\0alice\0wrong")
    with pytest.raises(SaslAuthenticationError, match="state FAILED"):
        failed.step(b"\0alice\0alice-secret")
    assert not failed.complete


def test_no_users() -> None:
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        PlainServer({}).step(b"\0alice\0alice-secret")


# --- the factory ------------------------------------------------------------------------------


def test_supported() -> None:
    assert SUPPORTED == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def test_new_server() -> None:
    looked_up: list[tuple[str, str]] = []

    def lookup(mechanism: str, user: str) -> scram.ScramCredential | None:
        looked_up.append((mechanism, user))
        return None

    plain = new_server("PLAIN", plain_users=USERS, scram_lookup=lookup)
    assert isinstance(plain, PlainServer)
    assert plain.step(b"\0admin\0admin-secret") == b"" and plain.username == "admin"
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        server = new_server(mechanism, plain_users=USERS, scram_lookup=lookup)
        assert isinstance(server, ScramServer) and server.mechanism == mechanism
        with pytest.raises(SaslAuthenticationError):
            server.step(b"n,,n=bob,r=abc")
    assert looked_up == [("SCRAM-SHA-256", "bob"), ("SCRAM-SHA-512", "bob")]


@pytest.mark.parametrize("mechanism", ["GSSAPI", "oauthbearer", "plain", "SCRAM-SHA-1", ""])
def test_new_server_unsupported(mechanism: str) -> None:
    with pytest.raises(ValueError, match="Unsupported SASL mechanism"):
        new_server(mechanism, plain_users=USERS, scram_lookup=lambda m, u: None)
