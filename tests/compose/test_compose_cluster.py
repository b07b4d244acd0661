"""docker-compose.yml brought up for real (`make test-compose`): ZooKeeper and three brokers.

Every container must turn healthy; a topic with three replicas is written with
acks=all and read back through the published ports (each broker advertises
its own, so the client follows the leaders); then one broker container is
killed (SIGKILL) and every record is still readable and the topic still takes
acks=all writes; once started again it rejoins every ISR; the Spark example runs against the cluster on the brokers'
internal listener; the console container shows the three brokers and the topic. Everything is torn
down afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import REPO
from tests.cluster.helpers import partition_metadata, wait_for, wait_for_leaders
from tests.cluster_process import QUIET
from tests.compose.engine import run
from tests.compose.stack import compose_stack, read_keys, wait_healthy

pytestmark = [pytest.mark.compose, pytest.mark.timeout(2400)]

BROKERS = {1: 9092, 2: 9093, 3: 9094}
SERVICES = ["zookeeper", *(f"broker-{n}" for n in BROKERS), "console"]
CONSOLE = "http://127.0.0.1:8080"


def bootstrap(nodes: list[int] = list(BROKERS)) -> str:  # noqa: B006 - never mutated
    return ",".join(f"127.0.0.1:{BROKERS[n]}" for n in nodes)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with compose_stack(
        "docker-compose.yml", SERVICES, [*BROKERS.values(), 8080], tmp_path_factory.mktemp("docker")
    ) as c:
        yield c


def _produce(bs: str, topic: str, numbers: range) -> None:
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True, "logger": QUIET})
    for n in numbers:
        producer.produce(topic, key=str(n).encode(), value=b"v%d" % n)
    assert producer.flush(90) == 0


def test_cluster_serves_a_replicated_topic_through_a_broker_kill(stack: list[str]) -> None:
    wait_healthy(stack, SERVICES)
    admin = AdminClient({"bootstrap.servers": bootstrap(), "logger": QUIET})
    wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == 3, 60, "every broker to register")
    md = admin.list_topics(timeout=10)
    assert {n: (b.host, b.port) for n, b in md.brokers.items()} == {
        n: ("localhost", p) for n, p in BROKERS.items()
    }
    for future in admin.create_topics(
        [NewTopic("replicated", 3, 3, config={"min.insync.replicas": "2"})]
    ).values():
        future.result(30)
    wait_for_leaders(bootstrap(), "replicated", 3, 3, timeout=60)
    _produce(bootstrap(), "replicated", range(3000))
    assert sorted(int(k) for k in read_keys(bootstrap(), "replicated", 3)) == list(range(3000))

    victim = partition_metadata(bootstrap(), "replicated")[0][0]
    killed = run(*stack, "kill", f"broker-{victim}", cwd=REPO, check=False)  # SIGKILL
    assert killed.returncode == 0, killed.stderr
    survivors = [n for n in BROKERS if n != victim]
    wait_for(  # ZooKeeper expires the dead broker's session (18 s by default)
        lambda: all(m[0] != victim for m in partition_metadata(bootstrap(survivors), "replicated").values()),
        90,
        f"broker {victim} to lead nothing",
    )
    assert sorted(int(k) for k in read_keys(bootstrap(survivors), "replicated", 3)) == list(range(3000))
    _produce(bootstrap(survivors), "replicated", range(3000, 4000))  # min.insync.replicas 2: two are enough
    assert sorted(int(k) for k in read_keys(bootstrap(survivors), "replicated", 3)) == list(range(4000))

    started = run(*stack, "start", f"broker-{victim}", cwd=REPO, check=False)
    assert started.returncode == 0, started.stderr
    wait_healthy(stack, [f"broker-{victim}"])
    # the restarted broker caught up and rejoined every ISR
    wait_for_leaders(bootstrap(), "replicated", 3, 3, timeout=90)


def test_spark_example_runs_against_the_cluster(stack: list[str]) -> None:
    wait_healthy(stack, SERVICES)
    built = run(*stack, "build", "spark-example", check=False, cwd=REPO, timeout=1500)  # `run` never builds
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    job = run(*stack, "run", "--rm", "spark-example", check=False, cwd=REPO, timeout=1500)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    admin = AdminClient({"bootstrap.servers": bootstrap(), "logger": QUIET})
    assert all(
        len(p.replicas) == 3
        for p in admin.list_topics("events", timeout=10).topics["events"].partitions.values()
    )
    assert read_keys(bootstrap(), "events-per-minute", 3)  # the job's per-minute totals


def test_console_shows_the_cluster(stack: list[str]) -> None:
    """The console service reaches the brokers on their internal listener and serves its pages."""
    import urllib.request

    admin = AdminClient({"bootstrap.servers": bootstrap(), "logger": QUIET})
    admin.create_topics([NewTopic("console-seen", 2, 3)])["console-seen"].result(60)

    def page(path: str) -> str:
        try:
            with urllib.request.urlopen(CONSOLE + path, timeout=10) as r:
                return r.read().decode()
        except OSError:
            return ""

    wait_for(lambda: '<dd id="stat-brokers">3</dd>' in page("/"), 120, "the console to show three brokers")
    wait_for(lambda: 'data-topic="console-seen"' in page("/topics"), 60, "the console to list the topic")
