"""Brokers and reassignments: what an operator of a growing cluster watches.

- ``/brokers``: each broker (online, or offline while the assignment still names it) with its
  address, rack, the partitions it leads, the replicas it holds and its bytes on disk, the
  controller marked; the leader imbalance per broker against the controller's
  ``leader.imbalance.per.broker.percentage``; how many reassignments are in progress.
- ``/reassignments``: each partition being reassigned with its target, adding and removing
  replicas and how far each adding replica has copied (bytes against the leader's), paged.

Both read the gateway's cluster snapshot (Metadata, DescribeCluster, one DescribeLogDirs per
broker) and one ListPartitionReassignments; ``/brokers`` adds the controller's DescribeConfigs,
kept for a minute. Nothing is asked per partition, so 2,000 partitions or 10,000 moves cost
the same handful of requests. The computations are in `console.placement`.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from client.admin import PartitionReassignment
from client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from client.types import TopicPartition
from console.app import add_page
from console.placement import broker_loads, leader_imbalance, reassignment_rows
from console.state import STATE
from console.web import fragment, int_param, link_maker, paginate, render

REASSIGNMENTS_PER_PAGE = 100


async def _reassignments(request: web.Request) -> dict[TopicPartition, PartitionReassignment] | str:
    """The reassignments in progress, or why the cluster does not list them (an older Kafka,
    no DESCRIBE permission on the cluster). A cluster out of reach raises, for the banner."""
    try:
        return await request.app[STATE].gateway.reassignments()
    except (KafkaConnectionError, KafkaTimeoutError):
        raise
    except KafkaError as exc:
        return f"The cluster does not list its reassignments: {exc}"


async def broker_regions(request: web.Request) -> dict[str, str]:
    gateway = request.app[STATE].gateway
    snap, ongoing = await asyncio.gather(gateway.snapshot(), _reassignments(request))
    balance = await gateway.leader_balance(snap.controller_id)
    loads = broker_loads(snap)
    return {
        "brokers-table": fragment(request, "_brokers_table.html", snap=snap, loads=loads, ongoing=ongoing),
        "imbalance": fragment(request, "_imbalance_table.html", rows=leader_imbalance(snap), balance=balance),
    }


async def brokers_page(request: web.Request) -> web.Response:
    return render(request, "brokers.html", regions=await broker_regions(request))


async def reassignment_regions(request: web.Request) -> dict[str, str]:
    snap, ongoing = await asyncio.gather(request.app[STATE].gateway.snapshot(), _reassignments(request))
    rows = reassignment_rows(snap, ongoing) if isinstance(ongoing, dict) else []
    shown = paginate(rows, int_param(request.query, "page", 1, low=1) or 1, REASSIGNMENTS_PER_PAGE)
    html = fragment(
        request,
        "_reassignments_table.html",
        page=shown,
        error=ongoing if isinstance(ongoing, str) else None,
        link=link_maker(request, ()),
    )
    return {"reassignments-table": html}


async def reassignments_page(request: web.Request) -> web.Response:
    return render(request, "reassignments.html", regions=await reassignment_regions(request))


def routes(app: web.Application) -> None:
    add_page(app, "/brokers", brokers_page, broker_regions)
    add_page(app, "/reassignments", reassignments_page, reassignment_regions)
