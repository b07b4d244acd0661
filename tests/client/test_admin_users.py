"""The admin client's SCRAM user calls against a real broker, then real SCRAM logins with what they set.

One broker for the module, with a PLAINTEXT listener (for the admin calls) and
a SASL_PLAINTEXT listener taking SCRAM-SHA-256 and SCRAM-SHA-512 (for the
logins: confluent-kafka's librdkafka and the bundled client).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError as CKError
from confluent_kafka import Producer as CKProducer

from client import AdminClient, AIOAdminClient, AuthenticationError, Consumer, KafkaResponseError, Producer
from client.admin_users import ScramDeletion, ScramUpsertion, random_salt
from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.timeout(60)


def start_sasl_broker(directory: Path) -> tuple[BrokerProcess, str]:
    """A started broker with PLAINTEXT (``.bootstrap``) and SASL_PLAINTEXT SCRAM listeners; the latter's address."""
    plain, sasl = free_port(), free_port()
    config = directory / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n"
    )
    proc = BrokerProcess(directory / "data", port=plain, extra=["--config", str(config)]).start()
    return proc, f"127.0.0.1:{sasl}"


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    proc, sasl = start_sasl_broker(tmp_path_factory.mktemp("scram"))
    try:
        yield proc, sasl
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


@pytest.fixture
def admin(brokers: tuple[BrokerProcess, str]) -> Iterator[AdminClient]:
    with AdminClient(bootstrap_servers=brokers[0].bootstrap) as a:
        yield a


def code(error: object) -> ErrorCode | int | None:
    return error.code if isinstance(error, KafkaResponseError) else None


def sasl_config(sasl: str, mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": sasl,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def test_add_describe_and_iterations(admin: AdminClient) -> None:
    result = admin.alter_user_scram_credentials(
        [
            ScramUpsertion("alice", "SCRAM-SHA-256", "pw-256"),
            ScramUpsertion("alice", "scram-sha-512", "pw-512", iterations=8192),
            ScramUpsertion("bob", "SCRAM-SHA-512", "pw"),
        ],
        [],
    )
    assert result == {"alice": None, "bob": None}
    assert admin.describe_user_scram_credentials(["alice"]) == {
        "alice": [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]
    }
    everyone = admin.describe_user_scram_credentials()
    assert everyone["bob"] == [("SCRAM-SHA-512", 4096)] and "alice" in everyone
    # Re-adding replaces the credential (here: its iteration count).
    assert admin.alter_user_scram_credentials([ScramUpsertion("bob", "SCRAM-SHA-512", "pw", 16384)], []) == {
        "bob": None
    }
    assert admin.describe_user_scram_credentials(["bob"]) == {"bob": [("SCRAM-SHA-512", 16384)]}


async def test_async_client_deletes_one_mechanism(brokers: tuple[BrokerProcess, str]) -> None:
    async with AIOAdminClient(bootstrap_servers=brokers[0].bootstrap) as admin:
        ups = [ScramUpsertion("carol", m, "pw") for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
        assert await admin.alter_user_scram_credentials(ups, []) == {"carol": None}
        result = await admin.alter_user_scram_credentials([], [ScramDeletion("carol", "SCRAM-SHA-256")])
        assert result == {"carol": None}
        assert await admin.describe_user_scram_credentials(["carol"]) == {"carol": [("SCRAM-SHA-512", 4096)]}
        await admin.alter_user_scram_credentials(deletions=[ScramDeletion("carol", "SCRAM-SHA-512")])
        gone = (await admin.describe_user_scram_credentials(["carol"]))["carol"]
        assert code(gone) == ErrorCode.RESOURCE_NOT_FOUND


def test_unknown_user_and_duplicates(admin: AdminClient) -> None:
    result = admin.alter_user_scram_credentials([], [ScramDeletion("nobody", "SCRAM-SHA-512")])
    assert code(result["nobody"]) == ErrorCode.RESOURCE_NOT_FOUND
    assert "Attempt to delete a user credential that does not exist" in str(result["nobody"])
    described = admin.describe_user_scram_credentials(["nobody", "twice", "twice"])
    assert code(described["nobody"]) == ErrorCode.RESOURCE_NOT_FOUND
    assert code(described["twice"]) == ErrorCode.DUPLICATE_RESOURCE


def test_refused_alterations_change_nothing(admin: AdminClient) -> None:
    result = admin.alter_user_scram_credentials(
        [
            ScramUpsertion("few-iterations", "SCRAM-SHA-256", "pw", iterations=100),
            ScramUpsertion("no-password", "SCRAM-SHA-256", ""),
            ScramUpsertion("odd-mechanism", "SCRAM-SHA-1", "pw"),
            ScramUpsertion("", "SCRAM-SHA-256", "pw"),
            ScramUpsertion("dave", "SCRAM-SHA-256", "pw"),
        ],
        [],
    )
    assert code(result["few-iterations"]) == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert "Iterations 100 not in the range [4096, 16384]" in str(result["few-iterations"])
    assert code(result["no-password"]) == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert code(result["odd-mechanism"]) == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert code(result[""]) == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert result["dave"] is None
    described = admin.describe_user_scram_credentials(["few-iterations", "no-password", "dave"])
    assert code(described["few-iterations"]) == ErrorCode.RESOURCE_NOT_FOUND
    assert code(described["no-password"]) == ErrorCode.RESOURCE_NOT_FOUND
    assert described["dave"] == [("SCRAM-SHA-256", 4096)]


def test_random_salts_are_kafka_shaped() -> None:
    salts = {random_salt() for _ in range(200)}
    assert len(salts) == 200
    assert all(0 < len(s) <= 26 and s.decode().isalnum() and s == s.lower() for s in salts)


def _librdkafka_login(config: dict[str, str], topic: str) -> str | None:
    """Produce one record with confluent-kafka; None when delivered, else the first error's name."""
    errors: list[str] = []
    delivered: list[bool] = []

    def on_error(err: CKError) -> None:
        errors.append(err.name())

    def on_delivery(err: CKError | None, _msg: object) -> None:
        if err is None:
            delivered.append(True)
        else:
            errors.append(err.name())

    p = CKProducer({**config, "error_cb": on_error, "message.timeout.ms": 10000})
    p.produce(topic, b"via librdkafka", on_delivery=on_delivery)
    deadline = time.monotonic() + 15
    while not delivered and not errors and time.monotonic() < deadline:
        p.poll(0.1)
    p.purge()
    p.flush(1)
    return None if delivered else (errors[0] if errors else "timed out")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_logs_in_with_the_credential(
    admin: AdminClient, brokers: tuple[BrokerProcess, str], mechanism: str
) -> None:
    user = f"ck-{mechanism.lower()}"
    salt = b"fixed-salt" if mechanism == "SCRAM-SHA-256" else None  # an explicit salt works too
    ups = [ScramUpsertion(user, mechanism, "s3cret", iterations=4500, salt=salt)]
    assert admin.alter_user_scram_credentials(ups, []) == {user: None}
    sasl = brokers[1]
    assert _librdkafka_login(sasl_config(sasl, mechanism, user, "s3cret"), "scram-ck") is None
    assert _librdkafka_login(sasl_config(sasl, mechanism, user, "wrong"), "scram-ck") == "_AUTHENTICATION"


def test_bundled_client_logs_in_with_the_credential(
    admin: AdminClient, brokers: tuple[BrokerProcess, str]
) -> None:
    ups = [ScramUpsertion("erin", m, "p@ss, word=") for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    assert admin.alter_user_scram_credentials(ups, []) == {"erin": None}
    sasl = brokers[1]
    config = sasl_config(sasl, "SCRAM-SHA-512", "erin", "p@ss, word=")
    with Producer(config) as p:
        meta = p.send("scram-own", b"via SASL", partition=0).get(15)
    with Consumer(config=config, auto_offset_reset="earliest") as c:
        c.assign([("scram-own", 0)])
        c.seek(("scram-own", 0), meta.offset)
        records = []
        deadline = time.monotonic() + 15
        while not records and time.monotonic() < deadline:
            records = list(c.poll(0.5))
    assert [r.value for r in records][:1] == [b"via SASL"]

    wrong = AdminClient(sasl_config(sasl, "SCRAM-SHA-256", "erin", "wrong"))
    with wrong, pytest.raises(AuthenticationError, match="invalid credentials"):
        wrong.check_connection()
    # Deleting the SCRAM-SHA-256 credential ends logins with it, not with SCRAM-SHA-512.
    assert admin.alter_user_scram_credentials([], [ScramDeletion("erin", "SCRAM-SHA-256")]) == {"erin": None}
    deleted = AdminClient(sasl_config(sasl, "SCRAM-SHA-256", "erin", "p@ss, word="))
    with deleted, pytest.raises(AuthenticationError):
        deleted.check_connection()
    with AdminClient(config) as other:
        assert other.describe_user_scram_credentials(["erin"]) == {"erin": [("SCRAM-SHA-512", 4096)]}
