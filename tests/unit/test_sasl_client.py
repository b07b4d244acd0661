"""The bundled client's SASL side: the factory, PLAIN's token, and driving any mechanism with respond()."""

from __future__ import annotations

import pytest

from broker.security import scram
from broker.security.mechanisms import new_server
from protocol.sasl_client import SUPPORTED, PlainClient, SaslClient, ScramClient, new_client
from protocol.scram import SaslAuthenticationError

PLAIN_USERS = {"alice": "alice-secret"}
CREDENTIALS = {
    (mechanism, "alice"): scram.credential_from_password(mechanism, "alice-secret")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
}


def exchange(client: SaslClient) -> str | None:
    """Run ``client`` against the broker's server for its mechanism, as a connection would."""
    server = new_server(
        client.mechanism, plain_users=PLAIN_USERS, scram_lookup=lambda m, u: CREDENTIALS.get((m, u))
    )
    token: bytes | None = client.first()
    while token is not None:
        token = client.respond(server.step(token))
    assert client.complete and server.complete
    return server.username


@pytest.mark.parametrize("mechanism", SUPPORTED)
def test_new_client_authenticates(mechanism: str) -> None:
    client = new_client(mechanism, "alice", "alice-secret")
    assert client.mechanism == mechanism
    assert exchange(client) == "alice"


@pytest.mark.parametrize("mechanism", SUPPORTED)
def test_new_client_wrong_password(mechanism: str) -> None:
    with pytest.raises(SaslAuthenticationError, match="Authentication failed"):
        exchange(new_client(mechanism, "alice", "wrong"))


def test_new_client_types() -> None:
    assert isinstance(new_client("PLAIN", "a", "b"), PlainClient)
    assert isinstance(new_client("SCRAM-SHA-512", "a", "b"), ScramClient)


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "scram-sha-256", ""])
def test_new_client_unsupported(mechanism: str) -> None:
    with pytest.raises(ValueError, match="Unsupported SASL mechanism"):
        new_client(mechanism, "a", "b")


@pytest.mark.parametrize(
    ("username", "password"), [("", "pw"), ("alice", ""), ("al\0ice", "pw"), ("alice", "p\0w")]
)
def test_plain_client_refuses_unsendable_credentials(username: str, password: str) -> None:
    with pytest.raises(ValueError):
        PlainClient(username, password)


def test_plain_client() -> None:
    client = PlainClient("alice", "alice-secret")
    with pytest.raises(RuntimeError):
        client.respond(b"")
    assert client.first() == b"\0alice\0alice-secret"
    assert not client.complete
    assert client.respond(b"") is None
    assert client.complete


def test_scram_client_first_message() -> None:
    client = ScramClient("SCRAM-SHA-256", "a=b,c", "pw", nonce="fixed")
    assert client.first() == b"n,,n=a=3Db=2Cc,r=fixed"
    fresh = [ScramClient("SCRAM-SHA-256", "a", "pw").first() for _ in range(2)]
    assert fresh[0] != fresh[1]


def test_scram_client_needs_a_username() -> None:
    with pytest.raises(ValueError):
        ScramClient("SCRAM-SHA-256", "", "pw")
