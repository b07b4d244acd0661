"""The fault suite's history checker finds each kind of broken promise, and nothing in a clean history."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults import history


def ack(w: str, n: int, p: int, o: int | None, t: float = 0.0) -> dict[str, object]:
    return {"k": "ack", "w": w, "n": n, "p": p, "o": o, "t": t}


def test_a_clean_history_has_no_problems() -> None:
    log = {0: [(0, "a:0"), (1, "b:0"), (2, "a:1")], 1: [(0, "b:1")]}
    events = [ack("a", 0, 0, 0), ack("b", 0, 0, 1), ack("a", 1, 0, 2), ack("b", 1, 1, 0)]
    events += [{"k": "read", "w": "c", "topic": "t", "key": "a:1", "p": 0, "o": 2}]
    events += [{"k": "commit", "w": "c", "g": "g", "p": 0, "o": 3, "t": 1.0}]
    report = history.Report()
    history.check_produced(report, events, log)
    history.check_reads(report, events, {"t": log})
    history.check_commits(report, events, {"g": {0: 3}})
    history.check_replicas(report, {"b1": {0: [(0, 2, 1, 7)]}, "b2": {0: [(0, 2, 1, 7), (3, 4, 2, 9)]}})
    history.check_pipeline(report, log, {5: [(0, "a:0"), (1, "b:0"), (2, "a:1"), (3, "b:1")]})
    assert report.problems() == {}
    assert report.counts() == {"acked": 4, "read": 1, "commits": 1}


def test_lost_moved_duplicated_and_out_of_order_records_are_reported() -> None:
    log = {0: [(0, "a:0"), (1, "a:2"), (2, "a:1"), (3, "a:2")]}
    events = [ack("a", 0, 0, 0), ack("a", 1, 0, 5), ack("a", 3, 0, 4)]
    report = history.Report()
    history.check_produced(report, events, log)
    problems = report.problems()
    assert problems["lost"] == ["a:3 acked at 0/4"]
    assert problems["moved"] == ["a:1 acked at 0/5, stored at [(0, 2)]"]
    assert problems["duplicated"] == ["a:2 at [(0, 1), (0, 3)]"]
    assert problems["out_of_order"] == ["a:1 at 0/2 after a:2 at 1"]


def test_a_fatal_client_error_is_a_problem() -> None:
    report = history.Report()
    history.check_produced(report, [{"k": "fatal", "w": "a", "e": "OUT_OF_ORDER_SEQUENCE_NUMBER"}], {})
    assert report.problems() == {"fatal": ["a: OUT_OF_ORDER_SEQUENCE_NUMBER"]}


def test_a_read_the_final_log_does_not_hold_is_a_phantom() -> None:
    log = {0: [(0, "a:0")]}
    events = [
        {"k": "read", "w": "c", "topic": "t", "key": "a:0", "p": 0, "o": 0},
        {"k": "read", "w": "c", "topic": "t", "key": "a:9", "p": 0, "o": 1},  # truncated later
        {"k": "read", "w": "c", "topic": "t", "key": "b:0", "p": 0, "o": 0},  # another record there now
    ]
    report = history.Report()
    history.check_reads(report, events, {"t": log})
    assert report.problems() == {
        "phantom_reads": ["c read a:9 at t/0/1; the log holds None", "c read b:0 at t/0/0; the log holds a:0"]
    }


def test_a_commit_below_an_acknowledged_one_went_backwards() -> None:
    events = [
        {"k": "commit", "w": "c", "g": "g", "p": 0, "o": 20, "t": 1.0},
        {"k": "commit", "w": "c", "g": "g", "p": 0, "o": 10, "t": 0.5},
        {"k": "commit", "w": "c", "g": "g", "p": 1, "o": 5, "t": 1.0},
    ]
    report = history.Report()
    history.check_commits(report, events, {"g": {0: 10, 1: 7}})
    assert report.problems() == {"commits_backwards": ["g partition 0: acknowledged 20, now 10"]}


def test_replicas_that_differ_below_the_smallest_log_end_diverge() -> None:
    same = [(0, 9, 0, 1), (10, 19, 1, 2)]
    report = history.Report()
    history.check_replicas(
        report, {"b1": {0: same, 1: same}, "b2": {0: same, 1: [(0, 9, 0, 1), (10, 19, 2, 3)]}}
    )
    assert report.problems() == {"divergent_replicas": ["partition 1: b2 differs below offset 20 at batch 1"]}


def test_the_pipeline_must_copy_each_input_exactly_once() -> None:
    source = {0: [(0, "a:0"), (1, "a:1"), (2, "a:2")]}
    output = {0: [(0, "a:0"), (1, "a:0"), (2, "a:1"), (3, "x:1")]}
    report = history.Report()
    history.check_pipeline(report, source, output)
    assert report.problems() == {
        "pipeline_missing": ["a:2"],
        "pipeline_duplicated": ["a:0 at [(0, 0), (0, 1)]"],
        "pipeline_foreign": ["x:1"],
    }


def test_an_ack_without_an_offset_only_needs_the_record_stored() -> None:
    report = history.Report()
    history.check_produced(report, [ack("a", 0, 0, None), ack("a", 1, 0, None)], {0: [(7, "a:0")]})
    assert report.problems() == {"lost": ["a:1 acked at 0/None"]}


def test_availability_is_the_longest_window_without_an_ack_per_fault_kind() -> None:
    events = [ack("a", i, 0, i, t) for i, t in enumerate([0.0, 1.0, 2.0, 9.0, 10.0, 20.0, 21.0])]
    events += [ack("b", i, 1, i, t) for i, t in enumerate([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])]
    faults = [
        {"kind": "kill-broker", "start": 1.5, "healed": 9.5},
        {"kind": "kill-broker", "start": 19.0, "healed": 19.5},
        {"kind": "pause-zookeeper", "start": 9.5, "healed": 12.0},
    ]
    # partition 1 has no ack from 9.5 to 13: the worse of the two for the ZooKeeper pause
    assert history.availability(events, faults, grace=1.0) == {"kill-broker": 7.0, "pause-zookeeper": 3.5}


def test_load_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(ack("a", 0, 0, 0)) + '\n{"k": "ack", "w"')
    assert history.load([path]) == [ack("a", 0, 0, 0)]


def test_a_record_resent_under_a_new_producer_epoch_is_counted_apart_from_broker_duplicates() -> None:
    """librdkafka re-sends possibly written records after bumping its epoch (its issue 4953):
    same producer id, a new epoch. The same epoch twice would be the broker failing to dedupe."""
    log = {0: [(0, "a:0"), (1, "a:1"), (2, "a:0"), (3, "a:2"), (4, "a:2")]}
    writers = {(0, 0): (7, 0), (0, 1): (7, 0), (0, 2): (7, 1), (0, 3): (7, 1), (0, 4): (7, 1)}
    report = history.Report()
    history.check_produced(report, [], log, writers)
    assert report.resent_after_epoch_bump == ["a:0 at [(0, 0), (0, 2)] by [(7, 0), (7, 1)]"]
    # a:0's second copy is not out of order either: it is the client's, not the broker's
    assert report.problems() == {
        "duplicated": ["a:2 at [(0, 3), (0, 4)]"],
        "out_of_order": ["a:2 at 0/4 after a:2 at 3"],
    }
    assert report.counts()["resent_after_epoch_bump"] == 1


def test_the_pipeline_copies_a_resent_record_as_often_as_the_source_holds_it() -> None:
    source = {0: [(0, "a:0"), (1, "a:0")]}
    report = history.Report()
    history.check_pipeline(report, source, {0: [(0, "a:0"), (1, "a:0")]})
    assert report.problems() == {}
    history.check_pipeline(report, source, {0: [(0, "a:0")]})
    assert report.problems() == {"pipeline_missing": ["a:0"]}


def test_failover_is_the_time_until_every_partition_the_target_led_has_a_new_leader() -> None:
    def line(clock: str, partition: int, leader: int) -> str:
        return f"2026-11-29 03:00:{clock} INFO minikafka.cluster: controller: events-{partition} leader {leader} epoch 1 ISR [1]"

    logs = [
        "\n".join([line("00,000", 0, 1), line("00,000", 1, 1), line("00,000", 2, 2), line("07,500", 0, -1)]),
        "\n".join([line("08,000", 0, 3), line("09,000", 1, 2), line("09,500", 2, 3)]),
        "2026-11-29 03:00:08,000 INFO minikafka.cluster: controller: other-1 leader 3 epoch 1 ISR [3]",
    ]
    writes = history.leader_writes(logs, "events")
    assert [(p, leader) for _, p, leader in writes] == [
        (0, 1),
        (1, 1),
        (2, 2),
        (0, -1),
        (0, 3),
        (1, 2),
        (2, 3),
    ]
    start = writes[0][0] + 2  # 03:00:02
    faults = [
        {"kind": "pause-broker", "target": "b1", "start": start, "healed": start + 10},  # led 0 and 1
        {"kind": "kill-broker", "target": "b3", "start": start, "healed": start + 5},  # led nothing
        {"kind": "asymmetric", "target": "b2", "start": start, "healed": start + 5},  # moves nothing
    ]
    assert history.failover(writes, faults) == {"pause-broker": 7.0}
    never = [{"kind": "isolate-broker", "target": "b2", "start": start + 8, "healed": start + 9}]
    assert history.failover(writes, never) == {"isolate-broker": 1.0}  # not moved before healing
    back = history.leader_writes([line("00,000", 0, 1), line("06,500", 0, 1)], "events")
    restarted = [
        {"kind": "kill-controller", "target": "b1", "start": back[0][0] + 1, "healed": back[0][0] + 9}
    ]
    assert history.failover(back, restarted) == {"kill-controller": 5.5}  # re-elected once registered again
