"""The master's `ReplicationLogCleaner` (HBase 2.x, reference §6.2): an oldWALs file may be deleted only if no
replication queue names it (queues of disabled peers and recovered queues included) and it is older than the
moment the queues were read. If ZooKeeper cannot be read, nothing is deleted.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from minihbase.replication.storage import QueueStorage

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)


class ReplicationLogCleaner:
    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster
        self.wals: set[str] | None = None
        self.read_zk_ms = 0

    def pre_clean(self) -> None:
        self.read_zk_ms = int(time.time() * 1000)
        zk = self.cluster.master.zk
        try:
            self.wals = QueueStorage(zk, self.cluster.config.znode_parent).all_wals()
        except Exception as e:
            log.warning("replication log cleaner: reading the queues failed, deleting nothing: %s", e)
            self.wals = None

    def is_file_deletable(self, status: dict) -> bool:
        if self.wals is None:
            return False
        return status["name"] not in self.wals and status["modificationTime"] < self.read_zk_ms
