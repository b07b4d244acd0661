"""docker-compose.yml's ``s3`` service brought up for real (`make test-compose`): SeaweedFS in its own image.

Only that service is built and started. It must turn healthy and take signed
uploads through the published port with the compose file's default
credentials (creating the bucket), refuse others, and keep its objects on
its volume when the container is killed and started again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from broker.tiered.object_store import ObjectNotFound, ObjectStoreError
from broker.tiered.s3_store import S3ObjectStore
from tests.broker_process import REPO
from tests.compose.engine import run
from tests.compose.stack import compose_stack, wait_healthy

pytestmark = [pytest.mark.compose, pytest.mark.timeout(1800)]

ENDPOINT = "http://127.0.0.1:8333"
ACCESS_KEY, SECRET_KEY = "minikafka", "minikafka-secret"  # docker-compose.yml's defaults


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with compose_stack("docker-compose.yml", ["s3"], [8333], tmp_path_factory.mktemp("docker")) as c:
        yield c


def _store(secret: str = SECRET_KEY) -> S3ObjectStore:
    return S3ObjectStore(
        "compose-check", endpoint_url=ENDPOINT, access_key_id=ACCESS_KEY, secret_access_key=secret
    )


async def _get_when_up(store: S3ObjectStore, key: str, timeout: float = 60) -> bytes:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await store.get(key)
        except ObjectNotFound:
            raise
        except ObjectStoreError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1)


async def test_s3_service_stores_objects_across_a_kill(stack: list[str]) -> None:
    wait_healthy(stack, ["s3"], 180)
    store = _store()
    await store.put("tiered/check", b"kept on the volume")
    assert await store.list("tiered/") == ["tiered/check"]
    with pytest.raises(ObjectStoreError):
        await _store("not-the-secret").get("tiered/check")

    killed = run(*stack, "kill", "s3", cwd=REPO, check=False)  # SIGKILL
    assert killed.returncode == 0, killed.stderr
    started = run(*stack, "start", "s3", cwd=REPO, check=False)
    assert started.returncode == 0, started.stderr
    wait_healthy(stack, ["s3"], 180)
    assert await _get_when_up(store, "tiered/check") == b"kept on the volume"
    await store.delete("tiered/check")
