"""Topics: the sortable, filterable, paginated list; create; a topic's page (partitions, configs
with their source, editable); delete with confirmation.

The list is sorted and cut into pages on the server, so 2,000 partitions cost the browser one
page of rows. Retention and cleanup policy come from DescribeConfigs for the rows shown only.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from client.admin import TOPIC, ConfigEntry, NewTopic
from client.errors import KafkaError
from console.app import add_page
from console.state import STATE
from console.web import BadInput, fragment, int_param, link_maker, paginate, render, topic_or_error

SORTS = {
    "name": lambda t: t.name,
    "partitions": lambda t: len(t.partitions),
    "replication": lambda t: t.replication,
    "size": lambda t: t.size if t.size is not None else -1,
    "records": lambda t: t.records if t.records is not None else -1,
    "urp": lambda t: t.under_replicated,
}
SHOWN_CONFIGS = ("retention.ms", "cleanup.policy")
PARTITIONS_PER_PAGE = 100


async def _shown_configs(request: web.Request, names: list[str]) -> dict[str, dict[str, ConfigEntry]]:
    if not names:
        return {}
    admin = request.app[STATE].gateway.admin
    found = await admin.describe_configs([(TOPIC, n) for n in names], SHOWN_CONFIGS)
    return {name: v for (_, name), v in found.items() if not isinstance(v, KafkaError)}


async def list_regions(request: web.Request) -> dict[str, str]:
    snap = await request.app[STATE].gateway.snapshot()
    text = request.query.get("q", "").strip().lower()
    internal = request.query.get("internal") == "1"
    sort = request.query.get("sort", "name")
    if sort not in SORTS:
        raise BadInput(f"cannot sort by {sort!r}; choose one of {', '.join(SORTS)}")
    descending = request.query.get("dir") == "desc"
    rows = [t for t in snap.topics.values() if (internal or not t.internal) and text in t.name.lower()]
    rows.sort(key=SORTS[sort], reverse=descending)
    shown = paginate(rows, int_param(request.query, "page", 1, low=1) or 1)
    configs = await _shown_configs(request, [t.name for t in shown.items])
    html = fragment(
        request,
        "_topics_table.html",
        page=shown,
        configs=configs,
        sort=sort,
        descending=descending,
        link=link_maker(request, ("q", "sort", "dir", "page", "internal")),
    )
    return {"topics-table": html}


async def list_page(request: web.Request) -> web.Response:
    return render(request, "topics.html", regions=await list_regions(request))


def _configs_from(text: str) -> dict[str, str]:
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"config line {number}: expected key=value, got {line!r}")
        out[key.strip()] = value.strip()
    return out


async def create(request: web.Request) -> web.Response:
    form = await request.post()
    name = str(form.get("name", "")).strip()
    if not name:
        raise BadInput("a topic needs a name")
    partitions = int_param(form, "partitions", -1, low=1, high=100_000)
    replication = int_param(form, "replication", -1, low=1, high=100)
    configs = _configs_from(str(form.get("configs", "")))
    gateway = request.app[STATE].gateway
    result = await gateway.admin.create_topics([NewTopic(name, partitions or -1, replication or -1, configs)])
    error = result.get(name)
    if error is not None:
        raise BadInput(f"topic {name!r} was not created: {error}")
    gateway.forget()
    raise web.HTTPSeeOther(f"/topics/{name}")


async def topic_regions(request: web.Request) -> dict[str, str]:
    row = await topic_or_error(request)
    shown = paginate(row.partitions, int_param(request.query, "page", 1, low=1) or 1, PARTITIONS_PER_PAGE)
    return {
        "partitions": fragment(
            request, "_partitions.html", topic=row, page=shown, link=link_maker(request, ())
        ),
        "topic-summary": fragment(request, "_topic_summary.html", topic=row),
    }


async def topic_page(request: web.Request) -> web.Response:
    row = await topic_or_error(request)
    admin = request.app[STATE].gateway.admin
    regions, found = await asyncio.gather(topic_regions(request), admin.describe_configs([(TOPIC, row.name)]))
    configs = found.get((TOPIC, row.name))
    if isinstance(configs, KafkaError):
        configs_error, configs = str(configs), {}
    else:
        configs_error = None
    return render(
        request,
        "topic.html",
        topic=row,
        regions=regions,
        configs=sorted((configs or {}).values(), key=lambda c: c.name),
        configs_error=configs_error,
        saved=request.query.get("saved"),
    )


async def alter_configs(request: web.Request) -> web.Response:
    row = await topic_or_error(request)
    form = await request.post()
    key = str(form.get("key", "")).strip()
    if not key:
        raise BadInput("name the config to change")
    admin = request.app[STATE].gateway.admin
    if form.get("action") == "reset":
        await admin.alter_configs((TOPIC, row.name), delete_configs=[key])
    else:
        await admin.alter_configs((TOPIC, row.name), {key: str(form.get("value", "")).strip()})
    raise web.HTTPSeeOther(f"/topics/{row.name}?saved={key}#configs")


async def delete(request: web.Request) -> web.Response:
    row = await topic_or_error(request)
    form = await request.post()
    if str(form.get("confirm", "")).strip() != row.name:
        raise BadInput(f"to delete the topic, type its name ({row.name}) in the confirmation box")
    gateway = request.app[STATE].gateway
    result = await gateway.admin.delete_topics([row.name])
    if result.get(row.name) is not None:
        raise BadInput(f"topic {row.name!r} was not deleted: {result[row.name]}")
    gateway.forget()
    raise web.HTTPSeeOther(f"/topics?deleted={row.name}")


def routes(app: web.Application) -> None:
    add_page(app, "/topics", list_page, list_regions)
    app.router.add_post("/topics", create)
    add_page(app, "/topics/{name}", topic_page, topic_regions)
    app.router.add_post("/topics/{name}/configs", alter_configs)
    app.router.add_post("/topics/{name}/delete", delete)
