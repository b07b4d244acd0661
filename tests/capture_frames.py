"""Capture request frames sent by the real clients, as test data and fuzz seeds.

Usage: python -m tests.capture_frames   (rewrites tests/data/frames/)

Starts a broker, puts a recording TCP proxy in front of it, and runs each
client (kafka-python, aiokafka, confluent-kafka, kcat) through produce,
consume and admin calls, confluent-kafka also through a consumer group with
``group.protocol=consumer`` (KIP-848), and the Node.js clients of tests/node
(kafkajs, @platformatic/kafka 1.x and 2.x; when `make node-clients` has
installed them) through their scripts. Every distinct (client, api key,
version) request is saved once as `<client>/<api>-v<version>.bin`: the frame
body without its size prefix, header included. Frames already saved are kept
(the versions a client spoke against an older broker stay covered); new
(client, api, version) triples are added. The advertised port in Metadata
answers is the proxy's (the broker is started with advertised.port set to it),
so every connection of every client goes through the proxy.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.broker_process import BrokerProcess, free_port
from tests.compat import clients

OUT = Path(__file__).resolve().parent / "data" / "frames"


class Recorder:
    def __init__(self, listen_port: int, target_port: int) -> None:
        self.listen_port = listen_port
        self.target_port = target_port
        self.client = "unknown"
        self.frames: dict[tuple[str, int, int], bytes] = {}
        self.loop = asyncio.new_event_loop()

    async def _pipe_requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version = struct.unpack_from(">hh", frame)
                self.frames.setdefault((self.client, api_key, version), frame)
                writer.write(struct.pack(">i", size) + frame)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        await asyncio.gather(self._pipe_requests(reader, up_writer), self._pipe(up_reader, writer))

    def start(self) -> None:
        async def serve() -> None:
            await asyncio.start_server(self._handle, "127.0.0.1", self.listen_port)

        self.loop.run_until_complete(serve())
        threading.Thread(target=self.loop.run_forever, daemon=True).start()


NODE = Path(__file__).resolve().parent / "node"
NODE_RUNS = [  # (client name, node binary, script, package)
    ("kafkajs", "node", "kafkajs.mjs", "kafkajs"),
    ("platformatic-1", "node", "platformatic.mjs", "platformatic-kafka-1"),
    (
        "platformatic-2",
        str(NODE / "node_modules" / "node-22" / "bin" / "node"),
        "platformatic.mjs",
        "platformatic-kafka-2",
    ),
]


def _consumer_protocol_group(bootstrap: str, topic: str) -> None:
    """confluent-kafka with group.protocol=consumer: join, read, commit, leave."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-848",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and msg.error() is None:
            c.commit(msg, asynchronous=False)
            c.committed(c.assignment(), timeout=10)
            break
    c.close()


def _node_runs(bootstrap: str, recorder: Recorder, fresh_broker: Callable[[str], BrokerProcess]) -> None:
    """Each script on a broker of its own (they create the same topics)."""
    for name, node, script, package in NODE_RUNS:
        if (
            not (NODE / "node_modules" / package).is_dir()
            or shutil.which(node) is None
            and not Path(node).exists()
        ):
            print(f"skipping {name}: run `make node-clients`", file=sys.stderr)
            continue
        recorder.client = name
        recorder.target_port = fresh_broker(name).port
        args = [node, str(NODE / script), str(NODE / "node_modules" / package), bootstrap]
        if script == "platformatic.mjs":
            args.append("gzip,snappy,lz4" + (",zstd" if name.endswith("2") else ""))
        subprocess.run(args, check=True, capture_output=True, timeout=200)


def main() -> None:
    proxy_port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        # Clients learn the broker's address from Metadata: the broker advertises the proxy.
        env = {
            "MINIKAFKA_ADVERTISED_PORT": str(proxy_port),
            "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "100",
            "MINIKAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "500",
        }
        broker = BrokerProcess(Path(tmp) / "data", env=env)

        def fresh_broker(name: str) -> BrokerProcess:
            nonlocal broker
            broker.stop()
            broker = BrokerProcess(Path(tmp) / f"data-{name}", env=env).start()
            return broker

        broker.start()
        recorder = Recorder(proxy_port, broker.port)
        recorder.start()
        bootstrap = f"127.0.0.1:{proxy_port}"
        try:
            for name in clients.PRODUCERS:
                if name == "kcat" and shutil.which("kcat") is None:
                    continue
                recorder.client = name
                msgs = clients.kcat_messages() if name == "kcat" else clients.sample_messages()
                clients.PRODUCERS[name](bootstrap, f"cap-{name}", 0, msgs, "gzip")
                clients.CONSUMERS[name](bootstrap, f"cap-{name}", 0, len(msgs))
            recorder.client = "confluent-kafka"
            _consumer_protocol_group(bootstrap, "cap-confluent-kafka")
            _node_runs(bootstrap, recorder, fresh_broker)
        finally:
            broker.stop()
    added = 0
    for (client, api_key, version), frame in sorted(recorder.frames.items()):
        path = OUT / client / f"{api_key:02d}-v{version}.bin"
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(frame)
        added += 1
    print(f"added {added} of {len(recorder.frames)} frames under {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
