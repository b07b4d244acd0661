"""Fault tests (marker ``faults``: `make test-faults`): hosts in network namespaces, partitions by iptables."""

from __future__ import annotations

import pytest

from tests.faults import netns

pytestmark = pytest.mark.faults


@pytest.fixture(autouse=True)
def _needs_namespaces() -> None:
    why = netns.available()
    if why is not None:
        pytest.skip(why)
