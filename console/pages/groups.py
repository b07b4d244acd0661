"""Consumer groups: the paginated list with state and total lag; a group's page with members,
assignments, committed offsets and lag per partition, the lag-over-time plot (from the sampler's
history), offset reset with a dry-run preview, and delete.

Only the groups on the shown page are described, so 200 groups cost one page of requests.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from aiohttp import web

from client.errors import KafkaError
from client.offset_reset import OffsetResetError, ResetStrategy, execute_offset_reset, plan_offset_reset
from client.types import OffsetAndTimestamp, TopicPartition
from console.app import add_page
from console.pages.overview import window
from console.state import STATE
from console.web import BadInput, fragment, int_param, link_maker, paginate, parse_time, render

LAG_ROWS_PER_PAGE = 100
PLOTTED_PARTITIONS = 20
STRATEGIES = ("earliest", "latest", "offset", "shift", "timestamp")


async def _lags(admin: Any, groups: list[str]) -> dict[str, int | None]:
    """Total lag of each group over the partitions it committed (None: unknown or not allowed)."""
    if not groups:
        return {}
    committed = await admin.list_consumer_groups_offsets(groups)
    tps = sorted({tp for offsets in committed.values() if isinstance(offsets, dict) for tp in offsets})
    ends = await admin.list_offsets(dict.fromkeys(tps, "latest")) if tps else {}
    out: dict[str, int | None] = {}
    for group in groups:
        offsets = committed.get(group)
        if not isinstance(offsets, dict):
            out[group] = None
            continue
        total = 0
        for tp, om in offsets.items():
            end = ends.get(tp)
            if isinstance(end, OffsetAndTimestamp):
                total += max(end.offset - om.offset, 0)
        out[group] = total
    return out


async def list_regions(request: web.Request) -> dict[str, str]:
    gateway = request.app[STATE].gateway
    text = request.query.get("q", "").strip().lower()
    groups = [g for g in await gateway.groups() if text in g.lower()]
    shown = paginate(sorted(groups), int_param(request.query, "page", 1, low=1) or 1)
    names = list(shown.items)
    described, lags = await asyncio.gather(gateway.admin.describe_groups(names), _lags(gateway.admin, names))

    html = fragment(
        request,
        "_groups_table.html",
        page=shown,
        described=described,
        lags=lags,
        link=link_maker(request, ("q", "page")),
    )
    return {"groups-table": html}


async def list_page(request: web.Request) -> web.Response:
    return render(request, "groups.html", regions=await list_regions(request))


async def group_regions(request: web.Request) -> dict[str, str]:
    admin = request.app[STATE].gateway.admin
    group = request.match_info["group"]
    described, lag = await asyncio.gather(admin.describe_groups([group]), admin.consumer_group_lag(group))
    description = described.get(group)
    shown = paginate(lag, int_param(request.query, "page", 1, low=1) or 1, LAG_ROWS_PER_PAGE)
    total = sum(row.lag for row in lag if row.lag is not None)
    return {
        "group-summary": fragment(
            request,
            "_group_summary.html",
            group=group,
            description=description,
            total=total,
            partitions=len(lag),
        ),
        "lag-table": fragment(
            request, "_lag_table.html", group=group, page=shown, link=link_maker(request, ())
        ),
    }


async def group_page(request: web.Request) -> web.Response:
    group = request.match_info["group"]
    regions = await group_regions(request)
    return render(
        request,
        "group.html",
        group=group,
        regions=regions,
        plot_partitions=await _plotted(request, group),
        strategies=STRATEGIES,
        preview=None,
        message=request.query.get("done"),
        form={},
    )


async def lag_history(request: web.Request) -> web.Response:
    """JSON for the lag plot: the group's total and its most lagging partitions (or ``?partition=t-p``)."""
    state = request.app[STATE]
    group = request.match_info["group"]
    since, until = window(request)
    history = await asyncio.to_thread(state.store.group_history, group, since, until, 300)
    wanted = request.query.get("partition")
    series: list[dict[str, Any]] = []
    if wanted:
        if wanted not in history.partitions:
            raise BadInput(f"group {group!r} has no lag history for partition {wanted!r}")
        series.append({"name": wanted, "y": history.partitions[wanted]})
    else:
        series.append({"name": "total", "y": history.total})
        ranked = sorted(
            history.partitions.items(),
            key=lambda kv: max((v for v in kv[1] if v is not None), default=0),
            reverse=True,
        )
        series.extend({"name": name, "y": ys} for name, ys in ranked[:PLOTTED_PARTITIONS])
    return web.json_response({"x": history.timestamps, "series": series, "ylabel": "lag (records)"})


async def _plotted(request: web.Request, group: str) -> list[str]:
    """The "topic-partition" keys the group's lag history has (for the plot's partition picker)."""
    since, until = window(request)
    history = await asyncio.to_thread(request.app[STATE].store.group_history, group, since, until, 1)
    return sorted(history.partitions)


def _strategy(form: Any) -> ResetStrategy:
    kind = str(form.get("strategy") or "")
    if kind not in STRATEGIES:
        raise BadInput(f"choose how to reset: {', '.join(STRATEGIES)}")
    raw = str(form.get("value", "")).strip()
    if kind == "offset":
        value = int_param(form, "value", low=0)
        if value is None:
            raise BadInput("give the offset to reset to")
        return ResetStrategy.to_offset(value)
    if kind == "shift":
        value = int_param(form, "value")
        if value is None:
            raise BadInput("give the number of records to shift by (negative: back)")
        return ResetStrategy.shift_by(value)
    if kind == "timestamp":
        if not raw:
            raise BadInput("give the time to reset to")
        return ResetStrategy.to_timestamp(parse_time(raw))
    return ResetStrategy.earliest() if kind == "earliest" else ResetStrategy.latest()


async def _reset_partitions(admin: Any, form: Any) -> list[TopicPartition] | None:
    topic = str(form.get("topic", "")).strip()
    if not topic:
        return None  # every partition the group committed
    topics = await admin.describe_topics([topic])
    info = topics.get(topic)
    if info is None or isinstance(info, KafkaError):
        raise BadInput(f"there is no topic {topic!r}")
    return [TopicPartition(topic, p) for p in sorted(info.partitions)]


async def reset(request: web.Request) -> web.Response:
    state = request.app[STATE]
    group = request.match_info["group"]
    form = await request.post()
    strategy = _strategy(form)
    admin = state.gateway.admin
    partitions = await _reset_partitions(admin, form)
    rows = await plan_offset_reset(admin, group, partitions, strategy)
    if not rows:
        raise BadInput(f"group {group!r} has no committed offsets; name a topic to reset")
    if form.get("action") == "execute":
        try:
            await execute_offset_reset(admin, group, rows)
        except OffsetResetError as exc:  # the group is active: say so on the page
            raise BadInput(str(exc)) from None
        raise web.HTTPSeeOther(
            f"/groups/{quote(group, safe='')}?done=offsets+reset+for+{len(rows)}+partitions"
        )
    return render(
        request,
        "group.html",
        group=group,
        regions=await group_regions(request),
        plot_partitions=await _plotted(request, group),
        strategies=STRATEGIES,
        preview=rows,
        message=None,
        form=dict(form),
    )


async def delete(request: web.Request) -> web.Response:
    state = request.app[STATE]
    group = request.match_info["group"]
    form = await request.post()
    if str(form.get("confirm", "")).strip() != group:
        raise BadInput(f"to delete the group, type its id ({group}) in the confirmation box")
    result = await state.gateway.admin.delete_groups([group])
    if result.get(group) is not None:
        raise BadInput(f"group {group!r} was not deleted: {result[group]}")
    state.gateway.forget()
    raise web.HTTPSeeOther(f"/groups?deleted={quote(group, safe='')}")


def routes(app: web.Application) -> None:
    add_page(app, "/groups", list_page, list_regions)
    add_page(app, "/groups/{group}", group_page, group_regions)
    app.router.add_get("/api/groups/{group}/lag", lag_history)
    app.router.add_post("/groups/{group}/reset", reset)
    app.router.add_post("/groups/{group}/delete", delete)
