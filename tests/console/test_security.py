"""The console with the client's security settings: a SASL login through ``--command-config``
keys, and the authorizer's answers shown as what they are (tests/client/test_admin_acls.py's
broker: ACL authorizer, a PLAIN listener)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from client.admin import AIOAdminClient, NewTopic
from console.app import make_app
from console.settings import ConsoleSettings
from tests.broker_process import BrokerProcess
from tests.client.test_admin_acls import USERS, start_acl_broker


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    proc, sasl = start_acl_broker(tmp_path_factory.mktemp("console-acls"))
    try:
        yield proc, sasl
    finally:
        proc.stop()


async def console_for(sasl: str, user: str, password: str, tmp_path: Path) -> AsyncIterator[TestClient]:
    settings = ConsoleSettings(
        bootstrap_servers=sasl,
        history_path=str(tmp_path / f"{user}.sqlite3"),
        client={
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": password,
            "default.api.timeout.ms": "3000",
        },
    )
    async with TestClient(TestServer(make_app(settings, sample=False))) as client:
        yield client


async def test_a_sasl_login_sees_what_its_acls_allow(
    secured: tuple[BrokerProcess, str], tmp_path: Path
) -> None:
    proc, sasl = secured
    async with AIOAdminClient({"bootstrap.servers": proc.bootstrap}) as root:  # the super user
        await root.create_topics([NewTopic("console-secret", 1, 1)])
    user = next(iter(USERS))
    async for web in console_for(sasl, user, USERS[user], tmp_path):
        page = await web.get("/topics")
        html = await page.text()
        assert page.status == 200
        assert 'data-topic="console-secret"' not in html  # no DESCRIBE on it: not listed, as Kafka
        assert "No topics" in html


async def test_a_wrong_password_is_a_sentence(secured: tuple[BrokerProcess, str], tmp_path: Path) -> None:
    _, sasl = secured
    user = next(iter(USERS))
    async for web in console_for(sasl, user, "not-the-password", tmp_path):
        page = await web.get("/topics")
        html = await page.text()
        assert page.status == 503 and "Traceback" not in html
        found = re.search(r'id="error-message">([^<]*)<', html)
        assert found and "refused the console&#39;s login" in found.group(1), html[:3000]
        assert re.search(r'id="banner"[^>]*>The cluster at [^<]* refused', html)


async def test_brokers_without_permission_on_the_cluster(
    secured: tuple[BrokerProcess, str], tmp_path: Path
) -> None:
    """A login without DESCRIBE on the cluster still gets the brokers and their leaderships
    (Metadata); sizes, reassignments and the controller's configs say that they were refused."""
    _, sasl = secured
    user = next(iter(USERS))
    async for web in console_for(sasl, user, USERS[user], tmp_path):
        page = await web.get("/brokers")
        html = await page.text()
        assert page.status == 200 and "Traceback" not in html, html[:3000]
        assert re.search(r'<tr data-broker="\d+" data-status="online" [^>]*data-bytes=""', html), html
        assert re.search(r"bytes on disk unknown \([^)]*CLUSTER_AUTHORIZATION_FAILED", html), html
        assert re.search(
            r'id="reassignments-count">The cluster does not list its reassignments: [^<]*uthoriz', html
        )
        threshold = re.search(r'id="imbalance-threshold">(.*?)</p>', html, re.S)
        assert threshold, html
        assert "Kafka's default" in threshold.group(1), threshold.group(1)
        assert "DescribeConfigs of broker 0: CLUSTER_AUTHORIZATION_FAILED" in threshold.group(1)
        page = await web.get("/reassignments")
        html = await page.text()
        assert page.status == 200
        assert re.search(r'id="reassignments-error">The cluster does not list its reassignments', html), html
