-- Ledger schema, version 4 (additive): alerts that reach a person (hbase_migration/alerts.py). Same portable
-- conventions as 001. The ledger, not Airflow, decides "one message per occurrence": a message's key is its
-- identity (inserting it twice is a no-op), and its deliveries are an outbox a later watch run retries.

-- One message. message_key = <alert_key>|<event>|<occurrence>: a failed DAG run's failure (event failed,
-- occurrence: the task instance that failed last and its try), or a watch breach's start (raised) and end
-- (cleared), which share the occurrence number seq of that alert_key (1, 2, ... as the breach comes back).
CREATE TABLE IF NOT EXISTS alert_messages (
    message_key  TEXT    NOT NULL PRIMARY KEY,
    alert_key    TEXT    NOT NULL,   -- <kind>|<cluster key>|<peer>, or migration_failed|<dag id>|<dag run id>
    event        TEXT    NOT NULL,   -- failed | raised | cleared
    seq          INTEGER NOT NULL,   -- a watch breach's occurrence number; 0 for a failed run
    kind         TEXT    NOT NULL,   -- migration_failed | peer_disabled | lag_breach | oldwals_quota
    cluster_key  TEXT    NOT NULL,
    conn_id      TEXT    NOT NULL,
    dag_run_id   TEXT    NOT NULL,   -- the Airflow DAG run that sent it
    run_id       TEXT,               -- the migration run it is about, when the ledger knows one
    created_ms   BIGINT  NOT NULL,
    subject      TEXT    NOT NULL,
    body         TEXT    NOT NULL,   -- the text as sent (no secret: connection ids, cluster keys, figures)
    facts_json   TEXT    NOT NULL    -- JSON object: the figures, also sent to webhooks
);
CREATE INDEX IF NOT EXISTS alert_messages_by_cluster ON alert_messages (cluster_key, alert_key);

-- One delivery of a message per channel configured when it was made (smtp:<conn id>, webhook:<conn id>).
-- A sender takes it (claimed_ms, a lease) before sending, so two senders never both send it; a failed send
-- frees it for the next watch run to retry.
CREATE TABLE IF NOT EXISTS alert_deliveries (
    message_key  TEXT    NOT NULL REFERENCES alert_messages (message_key),
    channel      TEXT    NOT NULL,
    attempts     INTEGER NOT NULL,
    claimed_ms   BIGINT,
    sent_ms      BIGINT,
    last_error   TEXT,               -- the last failure, without the URL or any token
    PRIMARY KEY (message_key, channel)
);
