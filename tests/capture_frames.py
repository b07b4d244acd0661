"""Capture request frames sent by the real clients, as test data and fuzz seeds.

Usage: python -m tests.capture_frames   (rewrites tests/data/frames/)

Starts a broker, puts a recording TCP proxy in front of it, and runs each
client (kafka-python, aiokafka, confluent-kafka, kcat) through produce,
consume and admin calls. Every distinct (client, api key, version) request is
saved once as `<client>/<api>-v<version>.bin`: the frame body without its size
prefix, header included. The advertised port in Metadata answers is the
proxy's (the broker is started with advertised.port set to it), so every
connection of every client goes through the proxy.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
import sys
import tempfile
import threading
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


def main() -> None:
    proxy_port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        # Clients learn the broker's address from Metadata: the broker advertises the proxy.
        broker = BrokerProcess(Path(tmp) / "data", env={"MINIKAFKA_ADVERTISED_PORT": str(proxy_port)})
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
        finally:
            broker.stop()
    if OUT.exists():
        shutil.rmtree(OUT)
    for (client, api_key, version), frame in sorted(recorder.frames.items()):
        path = OUT / client / f"{api_key:02d}-v{version}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(frame)
    print(f"saved {len(recorder.frames)} frames under {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
