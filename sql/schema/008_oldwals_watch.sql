-- Ledger schema, version 8: one oldWALs watchdog per run and cluster (issue 42). Same portable conventions as 001.

-- Every copy or export task of a run starts a watchdog beside its Spark job; they share this row. Whoever holds
-- the lease (owner, renewed at each reading; a holder that died loses it when it expires) asks the NameNode, at
-- most once per interval; the others read its newest reading here and apply the quota policy to their own job and
-- peer. `plan_json` is what a reading asks (hbase_migration/migration/quota.py WatchPlan): the ancestors of oldWALs
-- found once to bear a quota, so that no reading walks the namespace above oldWALs again.
CREATE TABLE IF NOT EXISTS oldwals_watch (
    run_id          TEXT   NOT NULL,
    cluster_key     TEXT   NOT NULL,   -- the watched cluster's key quorum:port:/znode-parent
    owner           TEXT,              -- the watchdog holding the lease, NULL: free
    expires_ms      BIGINT,
    plan_json       TEXT,              -- NULL until the first holder found the quota-bearing ancestors
    reading_json    TEXT,              -- the newest reading: its decision (ok | warn | breach) and growth points
    read_ms         BIGINT,            -- when it was taken
    readings        BIGINT NOT NULL,   -- readings taken for this run and cluster
    namenode_calls  BIGINT NOT NULL,   -- WebHDFS calls those readings (and the discovery) made
    updated_ms      BIGINT NOT NULL,
    PRIMARY KEY (run_id, cluster_key)
);
