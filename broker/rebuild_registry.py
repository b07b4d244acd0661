"""`minikafka broker --rebuild-registry`: rebuild a damaged topic registry from the partition directories.

Prints what it did to stdout (topics and partition counts, whose configs were
kept, which could not be recovered, where the damaged file was kept) and
returns the process exit code: 0 done, 1 the data directory is missing or in
use by a running broker. See `storage.topic_registry` for the rules.
"""

from __future__ import annotations

import os
import sys

from broker.broker import log_defaults
from broker.config import BrokerConfig
from storage import topic_registry
from storage.errors import LogDirLockedError
from storage.fs import FileSystem
from storage.log_manager import lock_data_dir, unlock_data_dir


def rebuild_registry(config: BrokerConfig) -> int:
    data_dir = str(config.data_dir)
    if not os.path.isdir(data_dir):
        print(f"minikafka: no data directory {data_dir}", file=sys.stderr)
        return 1
    try:
        fd = lock_data_dir(data_dir)
    except (LogDirLockedError, OSError) as exc:
        print(f"minikafka: cannot rebuild the topic registry: {exc}", file=sys.stderr)
        return 1
    try:
        report = topic_registry.rebuild(FileSystem(), data_dir, log_defaults(config))
    finally:
        unlock_data_dir(fd)
    if report.damaged_copy:
        print(f"kept the old registry as {report.damaged_copy}")
    print(f"registered {len(report.topics)} topics from the partition directories of {data_dir}:")
    for name, partitions in sorted(report.topics.items()):
        print(f"  {name}: {partitions} partitions")
    if report.configs_recovered:
        print(f"topic configs kept from the old registry: {', '.join(report.configs_recovered)}")
    if report.configs_lost:
        print(
            f"topic configs not recovered (these topics now use the broker's defaults; set their overrides "
            f"again with `minikafka topics alter`): {', '.join(report.configs_lost)}"
        )
    print("start the broker as usual now")
    return 0
