"""The console on a cluster of the size the issue names: 2,000 partitions and 200 groups, one of
them committing on 200 partitions (make test-console).

What keeps such pages usable is that lists are cut into pages on the server: the browser gets
50 topics, 50 groups or 100 partitions at a time whatever the cluster holds, and sorting is
done before the cut. How fast the pages are is measured by `make bench` (bench/console.py),
not asserted here. Screenshots go to ``test-artifacts/console/large/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from client.admin import AdminClient, NewTopic
from client.producer import Producer
from client.types import TopicPartition
from tests.broker_process import BrokerProcess
from tests.console.browser import Browser, ConsoleProcess, artifacts_dir, chrome, missing_browser

_missing = missing_browser()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_missing is not None, reason=_missing or ""),
    pytest.mark.timeout(300),
]

TOPICS, PARTITIONS, GROUPS = 100, 20, 200
WIDE = "wide-group"  # commits on 10 topics x 20 partitions


def topic_name(i: int) -> str:
    return f"big-{i:03d}"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("large") / "data").start()
    try:
        with AdminClient({"bootstrap.servers": proc.bootstrap}) as admin:
            made = admin.create_topics([NewTopic(topic_name(i), PARTITIONS, 1) for i in range(TOPICS)])
            assert all(e is None for e in made.values()), made
            producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 20})
            for i in range(TOPICS):  # topic i gets i + 1 records per partition: sizes differ
                for p in range(PARTITIONS):
                    for _ in range(i % 5 + 1):
                        producer.send(topic_name(i), b"x" * 100, partition=p)
            producer.flush()
            producer.close()
            wide = {TopicPartition(topic_name(t), p): 0 for t in range(10) for p in range(PARTITIONS)}
            admin.alter_consumer_group_offsets(WIDE, wide)
            for g in range(GROUPS - 1):
                admin.alter_consumer_group_offsets(
                    f"group-{g:03d}", {TopicPartition(topic_name(g % TOPICS), 0): 0}
                )
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def browser(big: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    console = ConsoleProcess(big.bootstrap, tmp_path_factory.mktemp("console-large")).start()
    driver = chrome()
    try:
        out = artifacts_dir() / "large"
        for old in out.glob("*.png"):
            old.unlink()
        yield Browser(driver, console.url, out)
    finally:
        driver.quit()
        console.stop()
        assert "Traceback" not in console.log(), console.log()


def rows(browser: Browser, css: str, attribute: str | None = None, cell: int | None = None) -> list[str]:
    """Read in one script (live regions replace their rows every few seconds): each row's
    ``attribute``, or the text of its ``cell``-th cell."""
    return browser.driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), r =>"
        " arguments[1] ? r.getAttribute(arguments[1]) : r.children[arguments[2]].textContent.trim())",
        css,
        attribute,
        cell,
    )


def test_overview_counts_every_partition(browser: Browser) -> None:
    browser.visit("/")
    browser.wait_text("#stat-topics", f"{TOPICS}")
    partitions = int(browser.text("#stat-partitions").replace(",", ""))
    assert partitions == TOPICS * PARTITIONS + 50  # and __consumer_offsets
    browser.wait_text("#stat-groups", f"{GROUPS}")
    browser.shot("overview")


def test_brokers_page_counts_every_partition(browser: Browser) -> None:
    """2,050 leaderships and replicas on one broker, read from one Metadata and one DescribeLogDirs."""
    browser.visit("/brokers")
    (leaders,) = rows(browser, "#brokers-table tr[data-broker]", "data-leaders")
    (replicas,) = rows(browser, "#brokers-table tr[data-broker]", "data-replicas")
    assert int(leaders) == int(replicas) == TOPICS * PARTITIONS + 50
    (preferred,) = rows(browser, "#imbalance tr[data-broker]", "data-preferred")
    assert int(preferred) == TOPICS * PARTITIONS + 50
    assert browser.text("#reassignments-count") == "No reassignments in progress."
    browser.shot("brokers")


def test_topics_come_a_page_at_a_time_sorted_on_the_server(browser: Browser) -> None:
    browser.visit("/topics")
    first = rows(browser, "tr[data-topic]", "data-topic")
    assert first == [topic_name(i) for i in range(50)]
    assert "Page 1 of 2 (100 in all)" in browser.text(".pager")
    browser.shot("topics-page-1")
    browser.find('a[rel="next"]').click()
    browser.wait(lambda: "page=2" in browser.driver.current_url, "page 2")
    assert rows(browser, "tr[data-topic]", "data-topic") == [topic_name(i) for i in range(50, 100)]
    browser.visit("/topics?sort=records&dir=desc")
    ordered = rows(browser, "tr[data-topic]", "data-topic")
    assert len(ordered) == 50
    counts = [int(re.sub(r"\D", "", c)) for c in rows(browser, "tr[data-topic]", None, 4)]
    assert counts == sorted(counts, reverse=True) and counts[0] == 5 * PARTITIONS
    browser.visit("/topics?q=big-09")
    assert rows(browser, "tr[data-topic]", "data-topic") == [topic_name(i) for i in range(90, 100)]
    browser.shot("topics-filtered")


def test_groups_come_a_page_at_a_time(browser: Browser) -> None:
    browser.visit("/groups")
    assert len(rows(browser, "tr[data-group]", "data-group")) == 50
    assert "Page 1 of 4 (200 in all)" in browser.text(".pager")
    browser.shot("groups")


def test_a_group_of_200_partitions_is_paged_and_plotted(browser: Browser) -> None:
    browser.visit(f"/groups/{WIDE}")
    assert len(rows(browser, "#lag-table tr[data-tp]", "data-tp")) == 100
    assert "Page 1 of 2" in browser.text("#lag-table .pager")
    browser.wait(lambda: browser.find("#lag-plot").get_attribute("data-points"), "the lag plot", timeout=40)
    browser.shot("wide-group")
    browser.visit(f"/groups/{WIDE}?page=2")
    assert len(rows(browser, "#lag-table tr[data-tp]", "data-tp")) == 100
