"""The README's client snippets work as written (against a test broker instead of 127.0.0.1:9092)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.broker_process import REPO, BrokerProcess

README = (REPO / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def python_snippets() -> list[str]:
    return [b for b in blocks("python") if "bootstrap" in b]


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(i, marks=pytest.mark.spark) if "pyspark" in snippet else i
        for i, snippet in enumerate(python_snippets())
    ],
)
def test_python_snippet_runs(broker: BrokerProcess, index: int) -> None:
    code = python_snippets()[index].replace("127.0.0.1:9092", broker.bootstrap)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert "hello" in res.stdout


def test_kcat_snippet_runs(broker: BrokerProcess) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat not installed")
    (script,) = [b for b in blocks("sh") if "kcat -P" in b]
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script.replace("127.0.0.1:9092", broker.bootstrap)],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert res.returncode == 0, res.stderr
    assert "0 k1 hello" in res.stdout
    assert 'topic "demo" with 1 partitions' in res.stdout
