"""The SCRAM credential store: validation, durability, and alterations that arrive together."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.security import scram
from broker.security.broker_security import BrokerSecurity
from broker.security.credentials import MAX_SALT_BYTES, Upsertion
from protocol.errors import ErrorCode


def _upsert(user: str, salt: bytes = b"salt-1234") -> Upsertion:
    salted = scram.salted_password("SCRAM-SHA-512", f"{user}-secret", salt, 4096)
    return Upsertion(user, 2, 4096, salt, salted)


def _security(tmp_path: Path) -> BrokerSecurity:
    return BrokerSecurity(BrokerConfig.load(overrides={"log.dirs": str(tmp_path)}), tmp_path)


def test_concurrent_alterations_all_reach_the_file(tmp_path: Path) -> None:
    async def run() -> None:
        security = _security(tmp_path)
        results = await asyncio.gather(
            *(security.credentials.alter([], [_upsert(f"user{i}")]) for i in range(8))
        )
        assert all(r[0].error == ErrorCode.NONE for r in results)
        again = _security(tmp_path)  # what a restart reads
        assert sorted(u for u, _ in again.credentials.describe(None)) == [f"user{i}" for i in range(8)]  # type: ignore[misc]
        assert not list(tmp_path.glob("*.tmp"))

    asyncio.run(run())


def test_a_salt_too_long_to_store_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    async def run() -> None:
        security = _security(tmp_path)
        [result] = await security.credentials.alter([], [_upsert("long", b"s" * (MAX_SALT_BYTES + 1))])
        assert result.error == ErrorCode.UNACCEPTABLE_CREDENTIAL
        assert security.credentials.lookup("SCRAM-SHA-512", "long") is None
        assert not (tmp_path / "__minikafka_scram_credentials.json").exists()

    asyncio.run(run())


def test_an_empty_list_of_users_describes_every_user(tmp_path: Path) -> None:
    async def run() -> None:
        security = _security(tmp_path)
        await security.credentials.alter([], [_upsert("a"), _upsert("b")])
        assert [u for u, _ in security.credentials.describe(None)] == ["a", "b"]  # type: ignore[misc]

    asyncio.run(run())


def test_a_listener_mechanism_minikafka_lacks_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text(
        "listeners=SASL_PLAINTEXT://127.0.0.1:0\n"
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=GSSAPI\n"
        f"log.dirs={tmp_path}\n"
    )
    with pytest.raises(ConfigError, match="sasl.enabled.mechanisms 'GSSAPI'"):
        BrokerSecurity(BrokerConfig.load(f), tmp_path)
