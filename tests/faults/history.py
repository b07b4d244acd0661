"""The fault suite's history checker: what the workloads saw against what the cluster holds at the end.

Workloads append one JSON object per line to their history file (`tests.faults.workload`):

- ``{"k": "ack", "w": W, "n": N, "p": P, "o": O, "t": T}``: producer ``W``'s record ``N`` (key
  ``"W:N"``) was acknowledged at partition ``P`` offset ``O`` (None: the client was not told, as
  librdkafka reports a retried batch the broker found already written), at wall-clock time ``T``;
- ``{"k": "err", "w": W, "n": N, "e": TEXT}``: it was reported failed (it may still be stored);
- ``{"k": "fatal", "w": W, "e": TEXT}``: the client gave up with a fatal error;
- ``{"k": "read", "w": W, "topic": TOPIC, "key": K, "p": P, "o": O}``: a consumer read key ``K``
  at ``P``/``O``;
- ``{"k": "commit", "w": W, "g": G, "p": P, "o": O, "t": T}``: group ``G``'s commit of offset
  ``O`` for partition ``P`` was acknowledged.

The final state is read after every fault is healed: each topic's records as ``{partition:
[(offset, key), ...]}``, each group's committed offsets, and each replica's batches
(``(base offset, last offset, leader epoch, CRC)``).

The ``check_*`` functions fill a `Report`; `Report.problems()` is empty when the run kept every
promise: nothing acknowledged lost or moved, nothing duplicated, each producer's records in order
within a partition, no commit gone backwards, no record read that the final log does not hold
there, replicas identical below the smallest log end, and every input record of the
transactional pipeline exactly once in its read_committed output.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

Batch = tuple[int, int, int, int]  # base offset, last offset, leader epoch, CRC
Log = Mapping[int, Sequence[tuple[int, str]]]  # partition -> [(offset, key)] in offset order


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every event of the history files (a torn last line, from a killed writer, is skipped)."""
    events: list[dict[str, Any]] = []
    for path in paths:
        for line in path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events


@dataclass
class Report:
    acked: int = 0
    read: int = 0
    commits: int = 0
    lost: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    fatal: list[str] = field(default_factory=list)
    commits_backwards: list[str] = field(default_factory=list)
    phantom_reads: list[str] = field(default_factory=list)
    divergent_replicas: list[str] = field(default_factory=list)
    pipeline_missing: list[str] = field(default_factory=list)
    pipeline_duplicated: list[str] = field(default_factory=list)
    pipeline_foreign: list[str] = field(default_factory=list)

    # Not a broker's broken promise: records librdkafka sent again under a new producer epoch
    # (it bumps the epoch of the whole producer when a request after a failed one is refused
    # OUT_OF_ORDER_SEQUENCE_NUMBER, and re-sends other partitions' possibly written records with
    # new sequence numbers: librdkafka issue 4953). No broker can tell those from new records.
    resent_after_epoch_bump: list[str] = field(default_factory=list)

    def problems(self) -> dict[str, list[str]]:
        """{kind: first examples} of every broken promise (empty: a clean run)."""
        kinds = [
            f.name for f in fields(self) if f.type == "list[str]" and f.name != "resent_after_epoch_bump"
        ]
        return {k: getattr(self, k)[:10] for k in kinds if getattr(self, k)}

    def counts(self) -> dict[str, int]:
        out = {"acked": self.acked, "read": self.read, "commits": self.commits}
        if self.resent_after_epoch_bump:
            out["resent_after_epoch_bump"] = len(self.resent_after_epoch_bump)
        out.update({kind: len(getattr(self, kind)) for kind in self.problems()})
        return out


def _where(log: Log) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for p, records in log.items():
        for offset, key in records:
            out.setdefault(key, []).append((int(p), offset))
    return out


def check_produced(
    report: Report,
    events: Sequence[Mapping[str, Any]],
    log: Log,
    writers: Mapping[tuple[int, int], tuple[int, int]] | None = None,
) -> None:
    """Acknowledged records against the final log (read_uncommitted, from the start).

    ``writers`` ({(partition, offset): (producer id, producer epoch)}, from the batch headers)
    tells a record the client sent again under a new epoch of the same producer id (reported
    apart, see `Report.resent_after_epoch_bump`) from one the broker wrote twice."""
    where = _where(log)
    resent: set[tuple[int, int]] = set()  # the later copies of records re-sent under a new epoch
    for e in events:
        if e["k"] == "ack":
            report.acked += 1
            key = f"{e['w']}:{e['n']}"
            if key not in where:
                report.lost.append(f"{key} acked at {e['p']}/{e['o']}")
            elif e["o"] is not None and (e["p"], e["o"]) not in where[key]:
                report.moved.append(f"{key} acked at {e['p']}/{e['o']}, stored at {where[key]}")
        elif e["k"] == "fatal":
            report.fatal.append(f"{e['w']}: {e['e']}")
    for key, places in where.items():
        if len(places) < 2:
            continue
        ids = [i for i in (writers.get(place) for place in places) if i is not None] if writers else []
        one_producer = len({pid for pid, _ in ids}) == 1
        if len(ids) == len(places) and one_producer and len(set(ids)) == len(ids):  # a new epoch each
            report.resent_after_epoch_bump.append(f"{key} at {places} by {ids}")
            resent.update(sorted(places)[1:])
        else:
            report.duplicated.append(f"{key} at {places}")
    for p, records in log.items():
        last: dict[str, tuple[int, int]] = {}
        for offset, key in records:
            if (int(p), offset) in resent:
                continue
            writer, _, number = key.rpartition(":")
            if not number.isdigit():
                continue
            n = int(number)
            before = last.get(writer)
            if before is not None and before[0] >= n:
                report.out_of_order.append(f"{key} at {p}/{offset} after {writer}:{before[0]} at {before[1]}")
            last[writer] = (n, offset)


def check_reads(report: Report, events: Sequence[Mapping[str, Any]], logs: Mapping[str, Log]) -> None:
    """Every record a consumer read is in the final log at that place (``logs`` by topic)."""
    at: dict[tuple[str, int, int], str] = {}
    for topic, log in logs.items():
        for p, records in log.items():
            for offset, key in records:
                at[(topic, int(p), offset)] = key
    for e in events:
        if e["k"] != "read":
            continue
        report.read += 1
        stored = at.get((e["topic"], e["p"], e["o"]))
        if stored != e["key"]:
            report.phantom_reads.append(
                f"{e['w']} read {e['key']} at {e['topic']}/{e['p']}/{e['o']}; the log holds {stored}"
            )


def check_commits(
    report: Report, events: Sequence[Mapping[str, Any]], committed: Mapping[str, Mapping[int, int]]
) -> None:
    """No group's final committed offset is below one it had acknowledged."""
    highest: dict[tuple[str, int], int] = {}
    for e in events:
        if e["k"] == "commit":
            report.commits += 1
            k = (e["g"], e["p"])
            highest[k] = max(highest.get(k, -1), e["o"])
    for (group, p), offset in sorted(highest.items()):
        final = committed.get(group, {}).get(p, -1)
        if final < offset:
            report.commits_backwards.append(f"{group} partition {p}: acknowledged {offset}, now {final}")


def check_replicas(report: Report, replicas: Mapping[str, Mapping[int, Sequence[Batch]]]) -> None:
    """Replicas (``{replica: {partition: batches}}``) hold the same batches below the smallest log end."""
    partitions = sorted({p for logs in replicas.values() for p in logs})
    for p in partitions:
        logs = {name: list(logs.get(p, [])) for name, logs in replicas.items()}
        ends = [batches[-1][1] + 1 if batches else 0 for batches in logs.values()]
        below = min(ends)
        trimmed = {name: [b for b in batches if b[1] < below] for name, batches in logs.items()}
        first = next(iter(trimmed.values()))
        for name, batches in trimmed.items():
            if batches != first:
                diff = next(
                    (i for i, (a, b) in enumerate(zip(first, batches, strict=False)) if a != b),
                    min(len(first), len(batches)),
                )
                report.divergent_replicas.append(
                    f"partition {p}: {name} differs below offset {below} at batch {diff}"
                )


def check_pipeline(report: Report, source: Log, output: Log) -> None:
    """The transactional pipeline's read_committed ``output`` holds each ``source`` record exactly
    once: each key as many times as the source holds it."""
    inputs = _where(source)
    outputs = _where(output)
    for key, places in inputs.items():
        if len(outputs.get(key, [])) < len(places):
            report.pipeline_missing.append(key)
    for key, places in outputs.items():
        if key not in inputs:
            report.pipeline_foreign.append(key)
        elif len(places) > len(inputs[key]):
            report.pipeline_duplicated.append(f"{key} at {places}")


def longest_gap(times: Sequence[float], start: float, end: float) -> float:
    """The longest time in [start, end] with no acknowledgement (``times`` sorted)."""
    inside = [t for t in times if start <= t <= end]
    edges = [start, *inside, end]
    return max(b - a for a, b in zip(edges, edges[1:], strict=False))


def availability(
    events: Sequence[Mapping[str, Any]], faults: Sequence[Mapping[str, Any]], grace: float
) -> dict[str, float]:
    """{fault kind: the longest window in which some partition acknowledged no produce, from the
    fault's start to ``grace`` s after it was healed}, the worst over the faults of that kind.
    Per partition, because most faults stop only the partitions one broker leads."""
    times: dict[int, list[float]] = {}
    for e in events:
        if e["k"] == "ack":
            times.setdefault(e["p"], []).append(e["t"])
    for ts in times.values():
        ts.sort()
    out: dict[str, float] = {}
    for f in faults:
        gap = max(longest_gap(ts, f["start"], f["healed"] + grace) for ts in times.values())
        out[f["kind"]] = round(max(out.get(f["kind"], 0.0), gap), 2)
    return out


# A controller's state write in a broker's log (text format): time, topic, partition, leader.
_CONTROLLER_WRITE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO minikafka\.cluster: controller: (.+)-(\d+) leader (-?\d+) "
)
BROKER_FAULTS = (
    "kill-broker",
    "kill-leader",
    "kill-controller",
    "kill-coordinator",
    "pause-broker",
    "isolate-broker",
    "cut-from-zookeeper",
)  # faults after which the controller must move the target's leaderships away


def leader_writes(logs: Iterable[str], topic: str) -> list[tuple[float, int, int]]:
    """(time, partition, leader) of every controller state write for ``topic`` in the brokers' logs, by time."""
    out = []
    for text in logs:
        for line in text.splitlines():
            m = _CONTROLLER_WRITE.match(line)
            if m and m.group(2) == topic:
                when = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                out.append((when, int(m.group(3)), int(m.group(4))))
    return sorted(out)


def failover(
    writes: Sequence[tuple[float, int, int]], faults: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """{fault kind: the longest time from the fault's start until the controller had elected a leader for
    every partition the target broker led}, the worst over the faults of that kind that took leaderships
    away (`BROKER_FAULTS` whose target led something). The controller elects only registered brokers: the
    first write naming a leader after the fault gives the partition a live one, another broker or the
    target itself once it came back and registered again (a SIGKILLed broker restarted before its old
    session expired is re-elected with a new epoch). What the broker side controls: the ZooKeeper
    session timeout, the controller's reaction and its writes; clients then need a metadata refresh,
    and librdkafka also waits for its requests in flight to the old leader."""
    out: dict[str, float] = {}
    for f in faults:
        if f["kind"] not in BROKER_FAULTS or not f["target"].startswith("b"):
            continue
        target = int(f["target"][1:])
        leader: dict[int, int] = {}
        for when, partition, node in writes:
            if when > f["start"]:
                break
            leader[partition] = node
        led = {p for p, node in leader.items() if node == target}
        if not led:
            continue
        moved: dict[int, float] = {}
        for when, partition, node in writes:
            if when > f["start"] and partition in led and partition not in moved and node != -1:
                moved[partition] = when
        took = max(moved.get(p, f["healed"]) for p in led) - f["start"]
        out[f["kind"]] = round(max(out.get(f["kind"], 0.0), took), 2)
    return out
