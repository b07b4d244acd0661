"""The console for a real user: a headless chromium (Selenium) on the console running as a
subprocess against a real broker (make test-console).

The tests are the steps of one story and run in order on shared state (one broker, one
console, one browser): an earlier failure skips the later steps. Each page visited is saved as
``test-artifacts/console/NN-step.png`` (``$CONSOLE_ARTIFACTS`` overrides), and a failed step
saves one more and prints the console's log.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from client.admin import AdminClient, NewTopic
from client.consumer import Consumer
from client.producer import Producer
from client.types import TopicPartition
from tests.broker_process import BrokerProcess, free_port
from tests.console.browser import (
    UNLABELLED_JS,
    Browser,
    ConsoleProcess,
    artifacts_dir,
    assert_keyboard_reachable,
    chrome,
    low_contrast,
    missing_browser,
)
from tests.console.conftest import REPORTS

_missing = missing_browser()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(_missing is not None, reason=_missing or "")]

TOPIC = "orders"
GROUP = "billing"
RECORDS = 300  # produced by the client to partition 0, one second apart
SLOW = 40.0  # waits that span the sampler, the live stream and the plot's refresh


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def shown(ms: int) -> str:
    """A timestamp as the messages page shows it."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


# ---------------------------------------------------------------------------------------------
# Fixtures: one broker, one console, one browser for the module; the story's shared state


@pytest.fixture(scope="module")
def console(kafka: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    proc = ConsoleProcess(kafka.bootstrap, tmp_path_factory.mktemp("console")).start()
    try:
        yield proc
    finally:
        crashed = proc.crashed()
        code = proc.stop()
        assert crashed is None, f"the console crashed (exit {crashed}):\n{proc.log()}"
        assert code in (0, -15), f"the console exited with {code} when stopped:\n{proc.log()}"
        assert "Traceback" not in proc.log(), f"the console logged a traceback:\n{proc.log()}"


@pytest.fixture(scope="module")
def browser(console: ConsoleProcess) -> Iterator[Browser]:
    driver = chrome()
    try:
        out = artifacts_dir()
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("[0-9][0-9]-*.png"):
            old.unlink()
        yield Browser(driver, console.url, out)
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def story(kafka: BrokerProcess) -> Iterator[SimpleNamespace]:
    state = SimpleNamespace(failed=None, consumer=None, base_ms=0)
    yield state
    if state.consumer is not None:
        state.consumer.close(autocommit=False)


@pytest.fixture(autouse=True)
def step(
    request: pytest.FixtureRequest, story: SimpleNamespace, browser: Browser, console: ConsoleProcess
) -> Iterator[None]:
    """Skip once an earlier step failed; on failure save a screenshot and show the console's log;
    fail the step during which the console crashed."""
    if story.failed:
        pytest.skip(f"an earlier step failed: {story.failed}")
    yield
    report = request.node.stash.get(REPORTS, {}).get("call")
    if report is not None and report.failed:
        story.failed = request.node.name
        try:
            print("screenshot:", browser.shot(f"FAILED-{request.node.name}"))
        except Exception as exc:  # the browser itself is gone
            print("no screenshot:", exc)
        print(f"--- console log ({console.log_path}) ---\n{console.log(8000)}")
    code = console.crashed()
    if code is not None:
        story.failed = request.node.name
        pytest.fail(f"the console crashed (exit {code}):\n{console.log()}")


# ---------------------------------------------------------------------------------------------
# The story


def test_01_overview_shows_the_broker_and_controller(browser: Browser, kafka: BrokerProcess) -> None:
    browser.visit("/")
    browser.wait_text("#stat-brokers", "1")
    controller = browser.text("#stat-controller")
    assert controller.isdigit(), controller
    rows = [r.text for r in browser.find_all("#summary tbody tr")]
    assert rows == [f"{controller} 127.0.0.1:{kafka.port} — controller"], rows
    assert browser.find("#banner").is_displayed() is False
    browser.shot("overview")


def test_01b_live_pages_in_a_row_and_back(browser: Browser, kafka: BrokerProcess) -> None:
    """Each live page holds a stream open; a browser allows six connections per server (HTTP/1.1),
    and pages kept in its back/forward cache used to keep theirs: the seventh page waited a
    minute. Now a page closes its stream when left and reopens it when shown again."""
    browser.driver.set_page_load_timeout(30)  # a hang detector (the stall was a minute), not a speed figure
    try:
        for path in ("/", "/topics", "/groups") * 3:
            browser.visit(path)  # TimeoutException if earlier pages' streams still hold the connections
    finally:
        browser.driver.set_page_load_timeout(60)
    browser.visit("/topics")
    browser.driver.execute_script("window.__notReloaded = true;")
    browser.visit("/groups")
    browser.driver.back()  # restored from the back/forward cache: must reopen its stream
    browser.wait(lambda: browser.path() == "/topics", "the way back to /topics")
    assert browser.driver.execute_script("return window.__notReloaded === true"), (
        "not restored from the cache"
    )
    with AdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
        assert admin.create_topics([NewTopic("elsewhere", 1, 1)]) == {"elsewhere": None}
    browser.wait(lambda: browser.find_all('tr[data-topic="elsewhere"]'), "the new topic's row (live)")
    browser.shot("topics-restored-live")


def test_01c_brokers_and_reassignments(browser: Browser, kafka: BrokerProcess) -> None:
    """The one broker leads and holds every partition, nothing is imbalanced or being moved, and
    its counts follow a topic created elsewhere without a reload."""

    def partitions() -> int:
        with AdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
            return sum(len(t.partitions) for t in admin.list_topics(internal=True).values())

    browser.visit("/brokers")
    (row,) = browser.find_all("#brokers-table tbody tr")
    node = row.get_attribute("data-broker")
    cells = [c.text for c in row.find_elements("css selector", "th, td")]
    count = f"{partitions():,}"
    assert cells[:6] == [f"{node} controller", f"127.0.0.1:{kafka.port}", "—", "online", count, count], cells
    assert cells[6].endswith(("B", "KiB", "MiB")), cells
    assert browser.text("#reassignments-count") == "No reassignments in progress."
    (balance,) = browser.find_all("#imbalance tbody tr")
    assert [c.text for c in balance.find_elements("css selector", "th, td")] == [
        node,
        "online",
        count,
        "0",
        "0 %",
    ]
    assert browser.text("#imbalance-threshold").startswith("Threshold: 10 % (leader.imbalance.per.broker")
    browser.driver.execute_script("window.__notReloaded = true;")
    with AdminClient({"bootstrap.servers": kafka.bootstrap}) as admin:
        assert admin.create_topics([NewTopic("two-more", 2, 1)]) == {"two-more": None}
    more = f"{partitions():,}"
    browser.wait(
        lambda: (
            browser.find(f'#brokers-table tr[data-broker="{node}"]').get_attribute("data-leaders")
            == more.replace(",", "")
        ),
        "the broker's leaderships to follow the new topic (live)",
    )
    assert browser.driver.execute_script("return window.__notReloaded === true"), "the page was reloaded"
    browser.shot("brokers")

    browser.submit('header a[href="/reassignments"]')
    assert browser.path() == "/reassignments"
    assert browser.text("#reassignments-table") == "No reassignments in progress."
    browser.shot("reassignments-none")


def test_02_create_a_topic_through_the_form(browser: Browser) -> None:
    browser.visit("/topics")
    assert not browser.find_all(f'tr[data-topic="{TOPIC}"]')
    browser.open_details("#create")
    browser.type("#new-name", TOPIC)
    browser.type("#new-partitions", "3")
    browser.shot("topics-create-form")
    browser.submit("#create button[type=submit]")
    assert browser.path() == f"/topics/{TOPIC}"
    assert browser.text("h1") == TOPIC
    partitions = [
        r.get_attribute("data-partition") for r in browser.find_all("#partitions tr[data-partition]")
    ]
    assert partitions == ["0", "1", "2"]
    browser.shot("topic-created")


def test_03_produce_through_the_page(browser: Browser) -> None:
    browser.visit(f"/topics/{TOPIC}")
    browser.submit("a.button[href$='/messages']")  # "Browse messages"
    assert browser.path() == f"/topics/{TOPIC}/messages"
    assert "No records in this range." in browser.text("#records")
    browser.open_details("#produce")
    browser.type("#p-partition", "1")
    browser.type("#p-key", "order-1")
    browser.type("#p-value", '{"item": "teapot", "qty": 2}')
    browser.type("#p-headers", "source=browser\ntrace=abc-123")
    browser.shot("messages-produce-form")
    browser.submit("#produce button[type=submit]")
    assert browser.text("p.ok") == "Produced at offset 0."
    assert browser.row_offsets() == [(1, 0)]
    cells = [c.text for c in browser.find_all("#records tr td")]
    assert cells[3] == "order-1" and cells[4] == '{"item": "teapot", "qty": 2}', cells
    assert cells[5].splitlines() == ["source: browser", "trace: abc-123"], cells
    browser.shot("messages-produced")

    browser.choose("#format", "json")
    browser.submit("form.browse button[type=submit]")
    value = browser.find("#records tr td:nth-child(5) pre").text
    assert value == '{\n  "item": "teapot",\n  "qty": 2\n}', value
    browser.shot("messages-json")


def test_04_browse_by_offset_timestamp_newest_and_search(
    browser: Browser, kafka: BrokerProcess, story: SimpleNamespace
) -> None:
    base = (int(time.time()) - 3600) * 1000  # an hour ago, one record a second
    story.base_ms = base
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5}) as producer:
        for i in range(RECORDS):
            producer.send(
                TOPIC,
                f'{{"n": {i}, "tag": "rec-{i:04d}"}}'.encode(),
                f"k{i}".encode(),
                partition=0,
                timestamp_ms=base + i * 1000,
            )
        producer.flush()

    browser.visit(f"/topics/{TOPIC}")
    browser.wait_text("#topic-records", f"{RECORDS + 1:,}")  # the live region catches up

    browser.visit(f"/topics/{TOPIC}/messages")
    browser.choose("#partition", "0")
    browser.choose("#mode", "offset")
    browser.type("#offset", "120")
    browser.submit("form.browse button[type=submit]")
    rows = browser.row_offsets()
    assert rows[0] == (0, 120) and rows == [(0, o) for o in range(120, 170)], rows
    assert "rec-0120" in browser.text("#records tr:first-child td:nth-child(5)")
    browser.shot("messages-from-offset-120")

    browser.choose("#mode", "timestamp")
    browser.type("#timestamp", iso(base + 150_500))  # between records 150 and 151
    browser.submit("form.browse button[type=submit]")
    rows = browser.row_offsets()
    assert rows[0] == (0, 151), rows[:3]
    assert browser.text("#records tr:first-child td:nth-child(3)") == shown(base + 151_000)
    browser.shot("messages-from-time")

    browser.choose("#mode", "newest")
    browser.submit("form.browse button[type=submit]")
    rows = browser.row_offsets()
    assert rows[:3] == [(0, 299), (0, 298), (0, 297)], rows[:3]
    browser.shot("messages-newest-first")

    browser.type("#search", "rec-0237")
    browser.submit("form.browse button[type=submit]")
    assert browser.row_offsets() == [(0, 237)]
    assert "searched 300 records for “rec-0237”" in browser.text("p.note")
    browser.shot("messages-search")


def _consume_until(consumer: Consumer, ends: dict[TopicPartition, int], deadline_s: float = 30.0) -> None:
    """Poll until the consumer's position reached ``ends`` on every partition."""
    deadline = time.monotonic() + deadline_s
    while True:
        consumer.poll(0.5)
        if consumer.assignment() == set(ends) and all(consumer.position(tp) >= n for tp, n in ends.items()):
            return
        assert time.monotonic() < deadline, {tp: consumer.position(tp) for tp in consumer.assignment()}


def test_05_group_appears_live_and_its_lag_plot_falls(
    browser: Browser, kafka: BrokerProcess, story: SimpleNamespace
) -> None:
    browser.visit("/groups")
    assert not browser.find_all(f'tr[data-group="{GROUP}"]')
    browser.driver.execute_script("window.__notReloaded = true;")
    browser.shot("groups-before")

    consumer = Consumer(
        TOPIC,
        config={
            "bootstrap.servers": kafka.bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        },
    )
    story.consumer = consumer
    tps = [TopicPartition(TOPIC, p) for p in range(3)]
    _consume_until(consumer, {tps[0]: 100, tps[1]: 1, tps[2]: 0})
    consumer.commit({tps[0]: 100, tps[1]: 0, tps[2]: 0})  # read part: 200 + 1 behind

    row = f'tr[data-group="{GROUP}"]'
    browser.wait_text(f"{row} td.lag", "201")
    assert browser.driver.execute_script("return window.__notReloaded === true"), "the page was reloaded"
    cells = [c.text for c in browser.find_all(f"{row} td")]
    assert (cells[0], cells[1], cells[3]) == (GROUP, "Stable", "1"), cells
    browser.shot("groups-live-row")

    browser.submit(f"{row} a")
    assert browser.path() == f"/groups/{GROUP}"
    assert browser.text("#group-lag") == "201"
    plot = "#lag-plot"

    def plotted_total() -> Any:
        last = browser.attr(plot, "data-last")
        return json.loads(last)[0] if last else None

    browser.wait(lambda: plotted_total() == 201, "the lag plot to show a total of 201", SLOW)
    points_before = int(browser.attr(plot, "data-points") or 0)
    browser.shot("group-lag-201")

    _consume_until(consumer, {tps[0]: RECORDS, tps[1]: 1, tps[2]: 0})
    consumer.commit()  # caught up
    browser.wait_text("#group-lag", "0", SLOW)
    browser.wait(lambda: plotted_total() == 0, "the lag plot's total to fall to 0", SLOW)
    assert int(browser.attr(plot, "data-points") or 0) > points_before
    lags = [c.text for c in browser.find_all("#lag-table td.lag")]
    assert lags == ["0", "0", "0"], lags
    assert browser.driver.execute_script("return document.querySelectorAll('#lag-plot .main-svg').length") > 0
    browser.shot("group-caught-up")


def test_06_reset_offsets_with_a_preview(browser: Browser, story: SimpleNamespace) -> None:
    story.consumer.close(autocommit=False)
    story.consumer = None
    browser.visit(f"/groups/{GROUP}")
    browser.wait_text("#group-state", "Empty")
    browser.choose("#strategy", "earliest")
    browser.submit("button[value=preview]")
    preview = [
        [c.text for c in r.find_elements("css selector", "td")]
        for r in browser.find_all("#reset-preview tbody tr")
    ]
    assert preview == [
        [TOPIC, "0", "300", "0"],
        [TOPIC, "1", "1", "0"],
        [TOPIC, "2", "0", "0"],
    ], preview
    assert browser.text("#group-lag") == "0"  # nothing changed yet
    browser.shot("group-reset-preview")

    browser.submit("button[value=execute]")
    assert browser.text("p.ok") == "Offsets reset for 3 partitions."
    assert browser.text("#group-lag") == f"{RECORDS + 1}"
    committed = [c.text for c in browser.find_all("#lag-table tbody tr td:nth-child(3)")]
    assert committed == ["0", "0", "0"], committed
    browser.shot("group-reset-done")


def test_07_bad_input_gets_a_readable_message(browser: Browser) -> None:
    browser.visit(f"/topics/{TOPIC}/messages")
    browser.choose("#partition", "0")
    browser.choose("#mode", "offset")
    browser.type("#offset", str(10**9))
    browser.submit("form.browse button[type=submit]")
    assert browser.error_message() == (
        f"offset {10**9} is past the end of partition 0 (its next offset is {RECORDS})"
    )
    assert "Traceback" not in browser.driver.page_source
    browser.shot("error-offset-past-end")

    browser.visit(f"/topics/{TOPIC}/messages?partition=0")
    browser.choose("#mode", "timestamp")
    browser.type("#timestamp", "yesterday at noon")
    browser.submit("form.browse button[type=submit]")
    assert browser.error_message().startswith("'yesterday at noon' is not a timestamp: use ISO 8601")
    assert "Traceback" not in browser.driver.page_source
    browser.shot("error-malformed-timestamp")


ACCESSIBLE_PAGES = {
    "brokers": "/brokers",
    "reassignments": "/reassignments",
    "topics": "/topics",
    "groups": "/groups",
    "topic": f"/topics/{TOPIC}",
    "messages": f"/topics/{TOPIC}/messages?partition=0&mode=oldest&limit=20",
    "group": f"/groups/{GROUP}",
}


@pytest.mark.parametrize("page", list(ACCESSIBLE_PAGES))
def test_08_accessibility(browser: Browser, page: str) -> None:
    browser.visit(ACCESSIBLE_PAGES[page])
    if page == "group":
        browser.wait(lambda: browser.attr("#lag-plot", "data-points"), "the lag plot to be drawn")
    unlabelled = browser.driver.execute_script(UNLABELLED_JS)
    assert unlabelled == [], f"inputs without a label on {page}: {unlabelled}"
    reached = assert_keyboard_reachable(browser)
    assert reached >= 5, reached
    checked, bad = low_contrast(browser.driver)
    assert checked >= 10 and not bad, f"text below 4.5:1 on {page}:\n" + "\n".join(bad)
    browser.shot(f"a11y-{page}")


def test_09_delete_the_topic(browser: Browser) -> None:
    browser.visit(f"/topics/{TOPIC}")
    browser.type("#confirm", TOPIC)
    browser.shot("topic-delete-confirm")
    browser.submit("button.danger[type=submit]")
    assert browser.path() == f"/topics?deleted={TOPIC}"
    assert browser.text("p.ok") == f"Topic {TOPIC} deleted."
    assert not browser.find_all(f'tr[data-topic="{TOPIC}"]')
    browser.shot("topics-after-delete")

    for path in (f"/topics/{TOPIC}/messages", f"/topics/{TOPIC}"):
        browser.visit(path)
        assert browser.error_message() == f"there is no topic {TOPIC!r} (deleted, or never created)"
        assert "Traceback" not in browser.driver.page_source
    browser.shot("error-topic-gone")


def _banner_for(browser: Browser, bootstrap: str, workdir: Path, step: str) -> str:
    """The overview of a console whose cluster does not answer: the banner's text."""
    other = ConsoleProcess(bootstrap, workdir, sample_interval=60).start(ready_path="/static/console.css")
    try:
        browser.visit("/", base_url=other.url)
        banner = browser.wait_text("#banner", lambda t: "does not answer" in t)
        assert browser.find("#banner").is_displayed()
        assert "Traceback" not in browser.driver.page_source
        assert browser.text("h1") == "Something needs attention"
        _, bad = low_contrast(browser.driver)
        assert not bad, bad
        browser.shot(step)
        return banner
    finally:
        crashed = other.crashed()
        other.stop()
        assert crashed is None, f"the console crashed (exit {crashed}):\n{other.log()}"
        assert "Traceback" not in other.log(), other.log()


def test_10_unreachable_broker_shows_a_banner(browser: Browser, tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    banner = _banner_for(browser, f"127.0.0.1:{port}", tmp_path, "unreachable-broker")
    assert banner.startswith(f"The cluster at 127.0.0.1:{port} does not answer: cannot connect"), banner


def test_11_silent_broker_shows_a_banner(browser: Browser, tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        banner = _banner_for(browser, address, tmp_path, "silent-broker")
    assert banner.startswith(f"The cluster at {address} does not answer"), banner
