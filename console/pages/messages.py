"""Messages of a topic: browse by partition and offset, from a timestamp, oldest or newest first,
search keys and values over a bounded range, live tail (server-sent events), produce a record.

Query of ``/topics/<t>/messages``: ``partition`` (a number or ``all``), ``mode`` (newest,
oldest, offset, timestamp), ``offset``, ``timestamp`` (ISO 8601 or ms), ``limit`` (1-500),
``format`` (text, json, hex), ``q`` (substring of key or value) and ``scan`` (records examined
per partition for a search, at most 100,000).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from client.errors import KafkaError
from client.types import OffsetAndTimestamp, TopicPartition
from console.formats import FORMATS, contains, show
from console.gateway import TopicRow
from console.reader import Span, browsing_consumer, read_ranges
from console.state import STATE
from console.web import BadInput, fragment, int_param, parse_time, render, topic_or_error
from protocol.errors import ErrorCode

MODES = ("newest", "oldest", "offset", "timestamp")
MAX_LIMIT = 500
MAX_SCAN = 100_000


def _choice(query: Any, name: str, allowed: tuple[str, ...]) -> str:
    value = str(query.get(name) or allowed[0])
    if value not in allowed:
        raise BadInput(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def _partitions(row: TopicRow, query: Any) -> list[int]:
    raw = str(query.get("partition") or "all")
    if raw == "all":
        return [p.partition for p in row.partitions]
    number = int_param(query, "partition", low=0)
    if number is None or number >= len(row.partitions):
        raise BadInput(f"topic {row.name!r} has partitions 0 to {len(row.partitions) - 1}, not {raw}")
    return [number]


def row_view(record: Any, fmt: str) -> dict[str, Any]:
    key, key_note = show(record.key, fmt)
    if key_note == "not JSON":  # plain-text keys are the rule, not worth a note on every row
        key_note = ""
    value, value_note = show(record.value, fmt)
    headers = [
        (name, show(data, "hex" if fmt == "hex" else "text")[0]) for name, data in record.headers or ()
    ]
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": key,
        "key_note": key_note,
        "value": value,
        "value_note": value_note,
        "headers": headers,
    }


async def _bounds(admin: Any, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
    """(log start, end) of each partition, asked now: the cluster snapshot may be seconds old (a
    topic deleted meanwhile answers UNKNOWN_TOPIC_OR_PARTITION, said as a sentence)."""
    tps = [TopicPartition(topic, n) for n in partitions]
    earliest, latest = await asyncio.gather(
        admin.list_offsets(dict.fromkeys(tps, "earliest")), admin.list_offsets(dict.fromkeys(tps, "latest"))
    )

    def offset(found: Any) -> int:
        if isinstance(found, KafkaError):
            if getattr(found, "code", None) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise BadInput(f"there is no topic {topic!r} (deleted, or never created)")
            raise found
        return found.offset if isinstance(found, OffsetAndTimestamp) else 0

    return {tp.partition: (offset(earliest.get(tp)), offset(latest.get(tp))) for tp in tps}


async def page(request: web.Request) -> web.Response:
    state = request.app[STATE]
    row = await topic_or_error(request)
    q = request.query
    mode = _choice(q, "mode", MODES)
    fmt = _choice(q, "format", FORMATS)
    limit = int_param(q, "limit", 50, low=1, high=MAX_LIMIT) or 50
    scan = int_param(q, "scan", 10_000, low=1, high=MAX_SCAN) or 10_000
    needle = q.get("q", "")
    partitions = _partitions(row, q)
    bounds = await _bounds(state.gateway.admin, row.name, partitions)
    notes: list[str] = []
    spans: dict[int, Span] = {}
    if mode == "offset":
        if len(partitions) != 1:
            raise BadInput("choose one partition to browse from an offset")
        number = partitions[0]
        offset = int_param(q, "offset", 0, low=0) or 0
        start, hw = bounds[number]
        if offset > hw:
            raise BadInput(f"offset {offset} is past the end of partition {number} (its next offset is {hw})")
        if offset < start:
            notes.append(f"offset {offset} was deleted; showing from the log start {start}")
            offset = start
        spans[number] = Span(offset, hw)
    elif mode == "timestamp":
        if not q.get("timestamp"):
            raise BadInput("give a timestamp to browse from")
        when = parse_time(str(q["timestamp"]))
        found = await state.gateway.admin.list_offsets(
            {TopicPartition(row.name, n): when for n in partitions}
        )
        for n in partitions:
            hit = found.get(TopicPartition(row.name, n))
            if isinstance(hit, OffsetAndTimestamp):
                spans[n] = Span(hit.offset, bounds[n][1])
        if not spans:
            notes.append("no record at or after that time")
    else:
        for n in partitions:
            start, hw = bounds[n]
            if mode == "newest":
                start = max(hw - (scan if needle else limit), start)
            spans[n] = Span(start, hw)
    match = None
    if needle:
        raw = needle.encode()
        match = lambda r: contains(r.key, raw) or contains(r.value, raw)  # noqa: E731
    result = await read_ranges(
        state.settings.client_config(),
        row.name,
        spans,
        limit=limit,
        scan=scan,
        match=match,
        keep_last=mode == "newest",
    )
    records = sorted(
        result.records, key=lambda r: (r.timestamp, r.partition, r.offset), reverse=mode == "newest"
    )
    records = records[:limit]
    if needle:
        notes.append(f"searched {result.scanned:,} records for “{needle}”")
    if not result.complete:
        notes.append("reading stopped after 5 s; narrow the range for the rest")
    return render(
        request,
        "messages.html",
        topic=row,
        rows=[row_view(r, fmt) for r in records],
        notes=notes,
        mode=mode,
        fmt=fmt,
        limit=limit,
        partition=q.get("partition", "all"),
        produced=q.get("produced"),
        formats=FORMATS,
        modes=MODES,
    )


async def produce(request: web.Request) -> web.Response:
    state = request.app[STATE]
    row = await topic_or_error(request)
    form = await request.post()
    partition = int_param(form, "partition", None, low=0)
    if partition is not None and partition >= len(row.partitions):
        raise BadInput(f"topic {row.name!r} has partitions 0 to {len(row.partitions) - 1}, not {partition}")
    headers = []
    for number, line in enumerate(str(form.get("headers", "")).splitlines(), 1):
        if line.strip():
            name, sep, value = line.partition("=")
            if not sep or not name.strip():
                raise BadInput(f"header line {number}: expected name=value, got {line.strip()!r}")
            headers.append((name.strip(), value.encode()))
    key = str(form.get("key", ""))
    value = str(form.get("value", ""))
    producer = await state.producer()
    sent = await producer.send_and_wait(
        row.name,
        value.encode(),
        key.encode() if key else None,
        partition=partition,
        headers=headers or None,
    )
    state.gateway.forget()
    raise web.HTTPSeeOther(
        f"/topics/{row.name}/messages?partition={sent.partition}&mode=offset&offset={sent.offset}&produced={sent.offset}"
    )


async def tail(request: web.Request) -> web.StreamResponse:
    """Server-sent events: ``event: records`` with rendered rows as new records arrive."""
    state = request.app[STATE]
    row = await topic_or_error(request)
    fmt = _choice(request.query, "format", FORMATS)
    partitions = _partitions(row, request.query)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
    try:
        await response.prepare(request)  # the browser may have left already
        async with browsing_consumer(state.settings.client_config()) as consumer:
            tps = [TopicPartition(row.name, p) for p in partitions]
            consumer.assign(tps)
            consumer.seek_to_end(*tps)
            for tp in tps:  # resolve "the end" now: a record produced after "ready" must be shown
                await consumer.position(tp)
            await response.write(b"event: ready\ndata: {}\n\n")
            while True:
                batch = await consumer.poll(timeout=1.0, max_records=200)
                if batch:
                    rows = [row_view(r, fmt) for r in batch]
                    html = fragment(request, "_record_rows.html", rows=rows, topic=row)
                    await response.write(f"event: records\ndata: {json.dumps({'html': html})}\n\n".encode())
                else:
                    await response.write(b": idle\n\n")  # notices a browser that went away
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response


def routes(app: web.Application) -> None:
    app.router.add_get("/topics/{name}/messages", page)
    app.router.add_post("/topics/{name}/messages", produce)
    app.router.add_get("/topics/{name}/tail", tail)
