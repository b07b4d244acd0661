"""Print the nemesis runs' reports as one table: ``python -m tests.faults.summary DIR``.

Reads every ``seed-N.json`` that `tests.faults.test_nemesis` wrote to ``DIR`` (its
``FAULT_REPORT_DIR``): a line per seed with its counts and problems, then per fault kind the
longest window without an acknowledged produce and the controller's failover time (worst and
median over the seeds).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(directory: str) -> int:
    reports = [json.loads(p.read_text()) for p in Path(directory).glob("seed-*.json")]
    if not reports:
        print(f"no seed-*.json in {directory}")
        return 1
    reports.sort(key=lambda r: r["seed"])
    print("seed  acked     read  commits  resent¹  problems")
    for r in reports:
        c = r["counts"]
        problems = {
            k: v for k, v in c.items() if k not in ("acked", "read", "commits", "resent_after_epoch_bump")
        }
        if r["blocked_after_healing"]:
            problems["blocked"] = len(r["blocked_after_healing"])
        resent = c.get("resent_after_epoch_bump", 0)
        print(
            f"{r['seed']:>4} {c['acked']:>6} {c['read']:>8} {c['commits']:>8} {resent:>8}  {problems or 'none'}"
        )
    print("¹ records librdkafka re-sent under a new producer epoch (librdkafka issue 4953), not the broker's")
    kinds = sorted({k for r in reports for k in r["availability_s"]})
    print(
        f"\nper fault kind, in s (session timeout {reports[0]['session_timeout_s']} s), worst / median over the seeds:"
    )
    print("- no ack: the longest window in which some partition acknowledged no produce (what clients saw)")
    print("- failover: from the fault until the controller had elected a leader for every partition")
    print("  the target broker led (what the broker controls; '-' where the fault moves no leadership)")
    print(f"{'fault kind':<26}{'no ack':>14}{'failover':>14}")
    for kind in kinds:
        gaps = [r["availability_s"][kind] for r in reports if kind in r["availability_s"]]
        moves = [r["failover_s"][kind] for r in reports if kind in r.get("failover_s", {})]
        failover = f"{max(moves):>6.1f} / {statistics.median(moves):<5.1f}" if moves else f"{'-':>8}      "
        print(f"{kind:<26}{max(gaps):>6.1f} / {statistics.median(gaps):<5.1f}{failover}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/faults"))
