"""The console's pages over HTTP (aiohttp's test server, no browser) against a real broker.

What a browser test would take minutes to cover: every page answers, forms act on the cluster,
and bad input or a missing topic gets a readable sentence with the right status, never a
traceback. The browser itself is exercised in test_browser.py (make test-console).
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from client.admin import AIOAdminClient, NewTopic
from client.producer import AIOProducer
from console.app import make_app
from console.settings import ConsoleSettings
from tests.broker_process import BrokerProcess, free_port


@pytest.fixture
async def web(kafka: BrokerProcess, tmp_path: Path) -> AsyncIterator[TestClient]:
    settings = ConsoleSettings(bootstrap_servers=kafka.bootstrap, history_path=str(tmp_path / "lag.sqlite3"))
    async with TestClient(TestServer(make_app(settings, sample=False))) as client:
        yield client


def message(page: str) -> str:
    """The sentence of an error page."""
    found = re.search(r'id="error-message">([^<]*)<', page)
    assert found, page[:2000]
    return html.unescape(found.group(1))


async def test_every_page_answers(web: TestClient, topic: str) -> None:
    r = await web.post("/topics", data={"name": topic, "partitions": "2"}, allow_redirects=False)
    assert r.status == 303 and r.headers["Location"] == f"/topics/{topic}"
    for path in ("/", "/topics", f"/topics/{topic}", f"/topics/{topic}/messages", "/groups"):
        r = await web.get(path)
        assert r.status == 200, (path, await r.text())
        assert "Traceback" not in await r.text()
    page = await web.get(f"/topics?q={topic}")
    assert f'data-topic="{topic}"' in await page.text()
    topic_page = await (await web.get(f"/topics/{topic}")).text()
    assert topic_page.count("data-partition=") == 2
    assert 'data-config="retention.ms"' in topic_page


async def test_produce_then_browse_by_offset_and_search(web: TestClient, topic: str) -> None:
    await web.post("/topics", data={"name": topic, "partitions": "1"})
    for i in range(5):
        r = await web.post(
            f"/topics/{topic}/messages",
            data={
                "key": f"k{i}",
                "value": f'{{"n": {i}, "word": "w{i}"}}',
                "partition": "0",
                "headers": "src=web",
            },
            allow_redirects=False,
        )
        assert r.status == 303 and f"offset={i}" in r.headers["Location"]
    html = await (await web.get(f"/topics/{topic}/messages?partition=0&mode=offset&offset=3")).text()
    assert re.findall(r'data-offset="(\d+)"', html) == ["3", "4"]
    html = await (await web.get(f"/topics/{topic}/messages?partition=0&mode=newest&limit=2")).text()
    assert re.findall(r'data-offset="(\d+)"', html) == ["4", "3"]
    html = await (await web.get(f"/topics/{topic}/messages?q=w2&format=json")).text()
    assert re.findall(r'data-offset="(\d+)"', html) == ["2"]
    assert "&#34;word&#34;: &#34;w2&#34;" in html and "src" in html  # pretty JSON, escaped; the header
    html = await (
        await web.get(f"/topics/{topic}/messages?partition=0&mode=oldest&format=hex&limit=1")
    ).text()
    assert "6b 30" in html  # key "k0" in hex


async def test_browse_from_a_timestamp(web: TestClient, kafka: BrokerProcess, topic: str) -> None:
    async with AIOProducer({"bootstrap.servers": kafka.bootstrap}) as producer:
        for i, ts in enumerate((1_000_000, 2_000_000, 3_000_000)):
            await producer.send_and_wait(topic, b"v%d" % i, partition=0, timestamp_ms=ts)
    html = await (
        await web.get(f"/topics/{topic}/messages?partition=0&mode=timestamp&timestamp=1500000")
    ).text()
    assert re.findall(r'data-offset="(\d+)"', html) == ["1", "2"]
    html = await (
        await web.get(f"/topics/{topic}/messages?partition=0&mode=timestamp&timestamp=1970-01-01T00:50:00")
    ).text()
    assert re.findall(r'data-offset="(\d+)"', html) == ["2"]  # 3,000 s = 3,000,000 ms


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("partition=0&mode=offset&offset=1000000000", "past the end of partition 0"),
        ("partition=0&mode=timestamp&timestamp=yesterday-ish", "is not a timestamp"),
        ("partition=7", "has partitions 0 to 1, not 7"),
        ("mode=sideways", "mode must be one of"),
        ("limit=0", "limit must be at least 1"),
        ("mode=offset&offset=1", "choose one partition"),
    ],
)
async def test_bad_browse_input_gets_a_sentence(
    web: TestClient, topic: str, query: str, expected: str
) -> None:
    await web.post("/topics", data={"name": topic, "partitions": "2"})
    r = await web.get(f"/topics/{topic}/messages?{query}")
    assert r.status == 400
    assert expected in message(await r.text())


async def test_a_vanished_topic_and_unknown_pages(web: TestClient) -> None:
    for path in ("/topics/never-made", "/topics/never-made/messages"):
        r = await web.get(path)
        assert r.status == 400
        assert "there is no topic 'never-made'" in message(await r.text())
    r = await web.get("/no/such/page")
    assert r.status == 404 and "No page at /no/such/page" in message(await r.text())


async def test_create_and_delete_topic_need_what_they_need(web: TestClient, topic: str) -> None:
    r = await web.post("/topics", data={"name": topic, "partitions": "two"})
    assert r.status == 400 and "partitions must be a whole number" in message(await r.text())
    r = await web.post("/topics", data={"name": topic, "configs": "retention.ms"})
    assert r.status == 400 and "expected key=value" in message(await r.text())
    await web.post("/topics", data={"name": topic, "partitions": "1"})
    r = await web.post("/topics", data={"name": topic, "partitions": "1"})
    assert r.status == 400 and "already exists" in message(await r.text())
    r = await web.post(f"/topics/{topic}/delete", data={"confirm": "something else"})
    assert r.status == 400 and "type its name" in message(await r.text())
    r = await web.post(f"/topics/{topic}/delete", data={"confirm": topic}, allow_redirects=False)
    assert r.status == 303
    r = await web.get(f"/topics/{topic}")
    assert r.status == 400


async def test_topic_configs_are_edited_and_reset(web: TestClient, kafka: BrokerProcess, topic: str) -> None:
    await web.post("/topics", data={"name": topic, "partitions": "1"})
    r = await web.post(
        f"/topics/{topic}/configs", data={"key": "retention.ms", "value": "12345"}, allow_redirects=False
    )
    assert r.status == 303
    async with AIOAdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
        entry = (await admin.describe_configs([(2, topic)]))[(2, topic)]["retention.ms"]
        assert (entry.value, entry.source) == ("12345", "DYNAMIC_TOPIC_CONFIG")
        r = await web.post(f"/topics/{topic}/configs", data={"key": "retention.ms", "value": "not-a-number"})
        assert r.status in (400, 409) and "retention.ms" in message(await r.text())
        await web.post(f"/topics/{topic}/configs", data={"key": "retention.ms", "action": "reset"})
        entry = (await admin.describe_configs([(2, topic)]))[(2, topic)]["retention.ms"]
        assert entry.source == "DEFAULT_CONFIG"


async def test_cross_site_posts_are_refused(web: TestClient, topic: str) -> None:
    r = await web.post("/topics", data={"name": topic}, headers={"Origin": "http://evil.example"})
    assert r.status == 403


async def test_an_unreachable_cluster_is_a_banner(tmp_path: Path) -> None:
    settings = ConsoleSettings(
        bootstrap_servers=f"127.0.0.1:{free_port()}",
        history_path=str(tmp_path / "lag.sqlite3"),
        client={"default.api.timeout.ms": "1500"},
    )
    async with TestClient(TestServer(make_app(settings, sample=False))) as client:
        r = await client.get("/topics")
        html = await r.text()
        assert r.status == 503
        assert "does not answer" in message(html) and "Traceback" not in html
        assert re.search(r'id="banner"[^>]*>The cluster at 127\.0\.0\.1:\d+ does not answer', html)
        r = await client.get("/api/groups/g/lag")
        assert r.status == 200  # the history is local: it answers (empty) while the cluster is away


async def _line(response: Any) -> bytes:
    """The next line of an event stream; fails when the stream ends or stays silent for 15 s."""
    line = await asyncio.wait_for(response.content.readline(), 15)
    assert line, "the event stream ended"
    return line


async def test_live_tail_streams_new_records(web: TestClient, kafka: BrokerProcess, topic: str) -> None:
    await web.post("/topics", data={"name": topic, "partitions": "1"})
    response = await web.get(f"/topics/{topic}/tail?partition=0&format=text")
    assert response.headers["Content-Type"] == "text/event-stream"
    assert (await response.content.readline()).startswith(b"event: ready")
    async with AIOProducer({"bootstrap.servers": kafka.bootstrap}) as producer:
        await producer.send_and_wait(topic, b"tailed-value", b"tailed-key", partition=0)
    seen = b""
    while b"event: records" not in seen:
        seen += await _line(response)
    data = await _line(response)
    assert b"tailed-value" in data and b'data-offset=\\"0\\"' in data
    response.close()


async def test_live_regions_arrive_over_server_sent_events(
    web: TestClient, kafka: BrokerProcess, topic: str
) -> None:
    """The page's live stream sends its regions, then a topic created elsewhere shows up in them."""
    response = await web.get(f"/live/topics?q={topic}")
    first = b""
    while b"event: tick" not in first:
        first += await _line(response)
    assert b'"id": "topics-table"' in first and b"No topics match" in first
    async with AIOAdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    later = b""
    while f'data-topic=\\"{topic}\\"'.encode() not in later:
        later += await _line(response)
    response.close()


async def test_messages_are_read_up_to_the_end_as_it_is_now(
    web: TestClient, kafka: BrokerProcess, topic: str
) -> None:
    """The topics pages share a snapshot a few seconds old; the messages page asks for the ends afresh."""
    await web.post("/topics", data={"name": topic, "partitions": "1"})
    assert (await web.get(f"/topics/{topic}")).status == 200  # the snapshot now knows an empty topic
    async with AIOProducer({"bootstrap.servers": kafka.bootstrap}) as producer:
        await producer.send_and_wait(topic, b"just-now", partition=0)
    page = await (await web.get(f"/topics/{topic}/messages?partition=0")).text()
    assert re.findall(r'data-offset="(\d+)"', page) == ["0"] and "just-now" in page


async def test_a_topic_deleted_behind_the_consoles_back(
    web: TestClient, kafka: BrokerProcess, topic: str
) -> None:
    """The snapshot still lists it for a few seconds; the messages page says it is gone, not that
    the cluster does not answer."""
    await web.post("/topics", data={"name": topic, "partitions": "1"})
    assert (await web.get(f"/topics/{topic}")).status == 200  # cached in the snapshot now
    async with AIOAdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
        assert await admin.delete_topics([topic]) == {topic: None}
    r = await web.get(f"/topics/{topic}/messages?partition=0")
    assert r.status == 400 and "there is no topic" in message(await r.text())


def rows_with(page: str, attribute: str) -> list[dict[str, str]]:
    """The data-* attributes (without "data-") of every table row of ``page`` that has
    ``data-<attribute>``, in page order."""
    found = (
        dict(re.findall(r'data-([\w-]+)="([^"]*)"', m.group(1))) for m in re.finditer(r"<tr ([^>]*)>", page)
    )
    return [attrs for attrs in found if attribute in attrs]


async def test_brokers_and_reassignments_of_one_broker(
    web: TestClient, kafka: BrokerProcess, topic: str
) -> None:
    """One broker leads and holds every partition, is its own controller, holds the bytes written,
    and nothing is being reassigned; the imbalance threshold is read from its config."""
    async with AIOAdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
        assert await admin.create_topics([NewTopic(topic, 3, 1)]) == {topic: None}
        async with AIOProducer({"bootstrap.servers": kafka.bootstrap}) as producer:
            for i in range(20):
                await producer.send_and_wait(topic, b"x" * 1000, partition=i % 3)
        partitions = sum(len(t.partitions) for t in (await admin.list_topics(internal=True)).values())
        sizes = await admin.describe_log_dirs()
    written = sum(size for tp, size in sizes.items() if tp.topic == topic)
    assert written > 20_000

    r = await web.get("/brokers")
    page = await r.text()
    assert r.status == 200 and "Traceback" not in page
    (row,) = rows_with(page, "leaders")
    node = row["broker"]
    assert (row["status"], row["controller"]) == ("online", "yes"), row
    assert int(row["leaders"]) == int(row["replicas"]) == partitions
    assert int(row["bytes"]) >= written
    assert f"127.0.0.1:{kafka.port}" in page
    assert "No reassignments in progress." in page
    (balance,) = rows_with(page, "preferred")
    assert balance == {"broker": node, "preferred": str(partitions), "elsewhere": "0", "above": "no"}
    found = re.search(r'id="imbalance-threshold">(.*?)</p>', page, re.S)
    assert found, page
    threshold = re.sub(r"\s+", " ", found.group(1))
    assert "<strong>10 %</strong>" in threshold and f"of the controller, broker {node}" in threshold, (
        threshold
    )

    r = await web.get("/reassignments")
    page = await r.text()
    assert r.status == 200 and 'id="no-reassignments">No reassignments in progress.' in page
