"""Helpers of the console's browser tests: the console as a subprocess, a headless chromium driven
by Selenium, screenshots as test artifacts, and the accessibility checks (labels, keyboard
reachability, WCAG contrast) run inside the page.

Screenshots go to ``test-artifacts/console/NN-step.png`` under the repository (gitignored), or
to ``$CONSOLE_ARTIFACTS``; the directory's old screenshots are removed when a run starts.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.broker_process import REPO, free_port

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TIMEOUT = 20.0
T = TypeVar("T")


def missing_browser() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    for name, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)):
        if not (shutil.which(path) or shutil.which(name)):
            return f"{name} is not installed ({path}); `make browser-tools` installs Debian's"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install '.[test]'"
    return None


def artifacts_dir() -> Path:
    return Path(os.environ.get("CONSOLE_ARTIFACTS") or REPO / "test-artifacts" / "console")


# ---------------------------------------------------------------------------------------------
# The console as a real subprocess


class ConsoleProcess:
    """``python -m console`` on a free port, its output kept in a log file."""

    def __init__(self, bootstrap: str, workdir: Path, *, sample_interval: float = 1.0) -> None:
        self.bootstrap = bootstrap
        self.port = free_port()
        self.workdir = workdir
        self.sample_interval = sample_interval
        self.log_path = workdir / f"console-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_path: str = "/", timeout: float = 30.0) -> ConsoleProcess:
        """Start it and wait until ``GET ready_path`` answers (any HTTP status counts)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "console",
                "--bootstrap-server",
                self.bootstrap,
                "--port",
                str(self.port),
                "--history",
                str(self.workdir / f"history-{self.port}.sqlite3"),
                "--sample-interval",
                str(self.sample_interval),
            ],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"the console exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + ready_path, timeout=15):
                    return self
            except urllib.error.HTTPError:
                return self  # it answered, with an error page: up
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(
                        f"the console did not answer in {timeout:g} s:\n{self.log()}"
                    ) from None
                time.sleep(0.1)

    def crashed(self) -> int | None:
        """The exit status if it ended on its own, else None."""
        return None if self.proc is None else self.proc.poll()

    def stop(self) -> int | None:
        """Terminate it; its exit status, or None if it had already exited (a crash)."""
        if self.proc is None:
            return 0
        early = self.proc.poll()
        if early is None:
            self.proc.terminate()
            try:
                code: int | None = self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(10)
        else:
            code = None
        self._log.close()
        return code

    def log(self, tail: int = 20_000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return "(no log)"


# ---------------------------------------------------------------------------------------------
# The browser


def chrome() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


class Browser:
    """A Selenium driver on one console: visits, waits that explain their failure, screenshots."""

    def __init__(self, driver: Any, base_url: str, artifacts: Path) -> None:
        self.driver = driver
        self.base_url = base_url
        self.artifacts = artifacts
        self._shots = itertools.count(1)

    # -- navigation and screenshots --------------------------------------------------------------

    def visit(self, path: str, base_url: str | None = None) -> None:
        self.driver.get((base_url or self.base_url) + path)
        self.wait(lambda: self.driver.execute_script("return document.readyState") == "complete", "page load")

    def path(self) -> str:
        return "/" + self.driver.current_url.split("/", 3)[-1]

    def shot(self, step: str) -> Path:
        """Save the whole page (beyond the window) as ``NN-step.png``."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^a-zA-Z0-9_.-]+", "-", step).strip("-")
        path = self.artifacts / f"{next(self._shots):02d}-{name}.png"
        try:
            import base64

            metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 12_000), "scale": 1}
            data = self.driver.execute_cdp_cmd(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
            )
            path.write_bytes(base64.b64decode(data["data"]))
        except Exception:  # a driver without CDP: the window is enough
            self.driver.save_screenshot(str(path))
        return path

    # -- waiting ---------------------------------------------------------------------------------

    def wait(self, probe: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
        """Poll ``probe`` until it returns something truthy; fail naming ``what`` and the last
        thing seen (the value, or the exception) if it does not within ``timeout``."""
        from selenium.common.exceptions import (
            NoSuchElementException,
            StaleElementReferenceException,
            TimeoutException,
            WebDriverException,
        )
        from selenium.webdriver.support.ui import WebDriverWait

        seen: list[Any] = [None]

        def check(_driver: Any) -> Any:
            try:
                value = probe()
            except (NoSuchElementException, StaleElementReferenceException) as exc:
                seen[0] = f"{type(exc).__name__}: {exc.msg}"
                return False
            except WebDriverException as exc:
                # While a page is being replaced Chrome may answer a question about an element
                # of the old document with this inspector error instead of a stale reference.
                if "does not belong to the document" not in (exc.msg or ""):
                    raise
                seen[0] = f"{type(exc).__name__}: {exc.msg}"
                return False
            seen[0] = value
            return value

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(check)
        except TimeoutException:
            raise AssertionError(
                f"waited {timeout:g} s for {what} on {self.driver.current_url}; last seen: {seen[0]!r}"
            ) from None

    def wait_text(self, css: str, expected: str | Callable[[str], bool], timeout: float = TIMEOUT) -> str:
        """The text of ``css`` once it equals ``expected`` (or satisfies it)."""
        ok = expected if callable(expected) else (lambda t: t == expected)
        found = self.wait(
            lambda: (lambda t: (t,) if ok(t) else None)(self.text(css)),
            f"{css} to read {expected!r}" if not callable(expected) else f"{css} to match",
            timeout,
        )
        return found[0]

    # -- finding and acting ----------------------------------------------------------------------

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return self.find(css).text.strip()

    def type(self, css: str, text: str) -> None:
        field = self.find(css)
        field.clear()
        field.send_keys(text)

    def choose(self, css: str, value: str) -> None:
        from selenium.webdriver.support.select import Select

        Select(self.find(css)).select_by_value(value)

    def open_details(self, css: str) -> None:
        details = self.find(css)
        if details.get_attribute("open") is None:
            details.find_element("css selector", "summary").click()
        self.wait(lambda: self.find(css).get_attribute("open") is not None, f"{css} to open")

    def submit(self, button_css: str) -> None:
        """Click a submit button and wait for the page it leads to."""
        # A mark on the old window object: the page that replaces it does not have one.
        self.driver.execute_script("window.__minikafkaOldPage = true")
        self.find(button_css).click()
        self.wait(
            lambda: self.driver.execute_script("return window.__minikafkaOldPage !== true"),
            f"the page after clicking {button_css}",
        )
        self.wait(lambda: self.driver.execute_script("return document.readyState") == "complete", "page load")

    def page_text(self) -> str:
        return self.find("body").text

    def error_message(self) -> str:
        return self.text("#error-message")

    def row_offsets(self) -> list[tuple[int, int]]:
        """(partition, offset) of each record row of the messages page, top to bottom."""
        return [
            (int(r.get_attribute("data-partition")), int(r.get_attribute("data-offset")))
            for r in self.find_all("#records tr[data-offset]")
        ]

    def attr(self, css: str, name: str) -> str | None:
        return self.find(css).get_attribute(name)


# ---------------------------------------------------------------------------------------------
# Accessibility


UNLABELLED_JS = """
const out = [];
for (const el of document.querySelectorAll('input, select, textarea')) {
  if (el.type === 'hidden') continue;
  const byLabel = Array.from(el.labels || []).some(l => l.textContent.trim() !== '');
  const byAria = (el.getAttribute('aria-label') || '').trim() !== '';
  const ids = (el.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean);
  const byRef = ids.some(id => { const r = document.getElementById(id); return r && r.textContent.trim(); });
  if (!(byLabel || byAria || byRef)) out.push(el.outerHTML.slice(0, 160));
}
return out;
"""

# One line per element a keyboard user should be able to reach, in document order; the same
# describer runs on document.activeElement after each Tab. Elements inside a closed <details>
# (not rendered) and ones with no box are left out.
DESCRIBE_JS = """
function visible(el) {  // rendered: not display:none, not visibility:hidden, not in a closed <details>
  if (el.checkVisibility) return el.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true});
  return el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden' &&
         !el.closest('details:not([open]) > :not(summary)');
}
window.__describe = function (el) {
  if (!el || el === document.body || el === document.documentElement) return null;
  const text = (el.getAttribute('aria-label') || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
  return [el.tagName.toLowerCase(), el.id, el.getAttribute('name') || '', el.getAttribute('value') || '',
          el.getAttribute('href') || '', text].join('|');
};
"""
FOCUSABLE_JS = (
    DESCRIBE_JS
    + """
// Controls count even with tabindex=-1 (a control the keyboard cannot reach is a failure);
// other elements only when they opt in with a tabindex of 0 or more.
const controls = 'a[href], button, input:not([type=hidden]), select, textarea, details > summary:first-of-type';
const out = [];
for (const el of document.querySelectorAll(controls + ', [tabindex]')) {
  if (el.disabled) continue;
  if (!el.matches(controls) && Number(el.getAttribute('tabindex')) < 0) continue;
  if (!visible(el)) continue;
  out.push(window.__describe(el));
}
return out;
"""
)
ACTIVE_JS = DESCRIBE_JS + "return window.__describe(document.activeElement);"

# Colour and (alpha-composited) background of visible elements that show text of their own.
COLOURS_JS = """
const parse = s => { const m = s.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
  const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
function background(el) {
  const layers = [];
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    const c = parse(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let bg = [255, 255, 255, 1];
  for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
  return bg;
}
const out = [];
for (const el of document.querySelectorAll('body, body *')) {
  if (el.closest('.plot, script, style, .sr-only, option, datalist')) continue;
  const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
  const st = getComputedStyle(el);
  const bg = background(el);
  const fg = over(parse(st.color), bg);
  out.push({what: el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
            (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '') +
            ' "' + el.textContent.trim().slice(0, 30) + '"',
            fg: fg.slice(0, 3), bg: bg.slice(0, 3),
            size: parseFloat(st.fontSize), weight: Number(st.fontWeight) || 400});
}
return out;
"""


def luminance(rgb: list[float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 channels)."""

    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: list[float], bg: list[float]) -> float:
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def low_contrast(driver: Any, minimum: float = 4.5) -> tuple[int, list[str]]:
    """(text elements checked, descriptions of those below ``minimum``:1)."""
    found = driver.execute_script(COLOURS_JS)
    bad = [
        f"{c['what']}: {contrast(c['fg'], c['bg']):.2f}:1 (rgb{tuple(round(v) for v in c['fg'])} "
        f"on rgb{tuple(round(v) for v in c['bg'])})"
        for c in found
        if contrast(c["fg"], c["bg"]) < minimum
    ]
    return len(found), bad


def tab_through(browser: Browser, limit: int = 400) -> tuple[list[str], list[str]]:
    """(the focusable elements in document order, what Tab reached in turn from the top).

    Focus starts on the body; Tab is pressed until the focus comes back to where it began
    (it leaves the page after the last element, then wraps around)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    driver = browser.driver
    expected = driver.execute_script(FOCUSABLE_JS)
    driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);")
    visited: list[str] = []
    first: str | None = None
    for _ in range(min(len(expected) + 20, limit)):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        now = driver.execute_script(ACTIVE_JS)
        if now is None:
            if visited:
                break  # focus left the page: every stop has been visited
            continue
        if now == first:
            break
        first = first or now
        visited.append(now)
    return expected, visited


def assert_keyboard_reachable(browser: Browser) -> int:
    """Every visible focusable element is reached by Tab, in document order; the count."""
    expected, visited = tab_through(browser)
    wanted = set(expected)
    reached = [v for v in visited if v in wanted]
    missing = [e for e in expected if e not in visited]
    assert not missing, f"not reachable with Tab on {browser.path()}: {missing}"
    assert reached == expected, (
        f"Tab order differs from document order on {browser.path()}:\nexpected {expected}\nreached  {reached}"
    )
    return len(expected)


def skip_without_browser() -> None:
    reason = missing_browser()
    if reason:
        pytest.skip(reason, allow_module_level=True)
