"""LeaderLink against a real socket: frames in pieces, frames larger than its buffer, bad frames, a lost peer."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from broker.replica.link import MAX_FRAME, LeaderLink
from protocol.errors import ProtocolError

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Serve], Coroutine[Any, Any, LeaderLink]]]:
    servers: list[asyncio.Server] = []
    links: list[LeaderLink] = []

    async def start(handler: Serve) -> LeaderLink:
        async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await handler(reader, writer)
                await reader.read()  # until the link closes its end
            finally:
                writer.close()

        server = await asyncio.start_server(closing, "127.0.0.1", 0)
        servers.append(server)
        link = await LeaderLink.connect("127.0.0.1", server.sockets[0].getsockname()[1])
        links.append(link)
        return link

    yield start
    for link in links:
        link.close()
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_frames_in_pieces_and_larger_than_the_buffer(serve) -> None:
    async def echo_reversed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                frame = await _read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            out = struct.pack(">i", len(frame)) + frame[::-1]
            for i in range(0, len(out), 7777):  # the response arrives in many small writes
                writer.write(out[i : i + 7777])
                await writer.drain()

    link = await serve(echo_reversed)
    for size in (4, 100, 70_000, 300_000, 50):
        payload = bytes(i % 251 for i in range(size))
        frame = await link.request(payload)
        assert isinstance(frame, memoryview) and not frame.readonly
        assert bytes(frame) == payload[::-1]


async def test_a_closed_connection_fails_the_request(serve) -> None:
    async def half_frame(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_frame(reader)
        writer.write(struct.pack(">i", 100) + b"x" * 10)
        await writer.drain()
        writer.close()

    link = await serve(half_frame)
    with pytest.raises(ConnectionResetError):
        await link.request(b"ping")
    with pytest.raises(ConnectionResetError):
        await link.request(b"again")


@pytest.mark.parametrize("size", [0, -5, MAX_FRAME + 1])
async def test_a_frame_of_impossible_size_is_a_protocol_error(serve, size: int) -> None:
    async def bad_size(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_frame(reader)
        writer.write(struct.pack(">i", size))
        await writer.drain()

    link = await serve(bad_size)
    with pytest.raises(ProtocolError):
        await link.request(b"ping")
