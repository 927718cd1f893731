-- Named statements of the run ledger, loaded by hbase_migration/ledger.py: each starts with a
-- "-- name: <name>" line and ends with ";". Portable SQL (SQLite >= 3.24 and PostgreSQL >= 9.5): upserts
-- are INSERT ... ON CONFLICT (natural key) DO UPDATE, so a task that re-runs writes the same row again.

-- name: create_schema_version
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_ms BIGINT  NOT NULL
);

-- name: schema_version
SELECT COALESCE(MAX(version), 0) AS version FROM schema_version;

-- name: insert_schema_version
INSERT INTO schema_version (version, name, applied_ms) VALUES (:version, :name, :applied_ms);

-- name: insert_run
-- A second start of the same run keeps the first row; the caller then compares and resumes it.
INSERT INTO migration_runs (run_id, dag_id, plan_name, source_key, target_key, peer_id, tables_json,
                            params_json, copy_id, status, started_ms)
VALUES (:run_id, :dag_id, :plan_name, :source_key, :target_key, :peer_id, :tables_json,
        :params_json, :copy_id, 'running', :started_ms)
ON CONFLICT (run_id) DO NOTHING;

-- name: get_run
SELECT run_id, dag_id, plan_name, source_key, target_key, peer_id, tables_json, params_json, copy_id,
       t0_ms, status, started_ms, ended_ms
FROM migration_runs WHERE run_id = :run_id;

-- name: resume_run
UPDATE migration_runs SET status = 'running', ended_ms = NULL WHERE run_id = :run_id;

-- name: end_run
UPDATE migration_runs SET status = :status, ended_ms = :ended_ms WHERE run_id = :run_id;

-- name: record_t0
-- Keep the earliest T0: a re-run of add_peer that finds its peer must not move T0 later, or the copy would
-- be trusted to cover edits that only the backlog holds.
UPDATE migration_runs
SET t0_ms = CASE WHEN t0_ms IS NULL OR :t0_ms < t0_ms THEN :t0_ms ELSE t0_ms END
WHERE run_id = :run_id;

-- name: recent_runs
-- :plan NULL: every run; else the runs of that plan are left out (the dashboard's list leaves out the watch's,
-- which run every 10 minutes and would push the migrations off the page), before the LIMIT.
SELECT r.run_id, r.dag_id, r.plan_name, r.source_key, r.target_key, r.peer_id, r.tables_json, r.params_json,
       r.copy_id, r.t0_ms, r.status, r.started_ms, r.ended_ms,
       n.state AS peer_state, n.reason AS peer_reason
FROM migration_runs r
LEFT JOIN peer_notes n
  ON n.run_id = r.run_id
 AND n.noted_ms = (SELECT MAX(m.noted_ms) FROM peer_notes m WHERE m.run_id = r.run_id)
WHERE CAST(:plan AS TEXT) IS NULL OR r.plan_name <> :plan  -- typed: PostgreSQL cannot infer a bare NULL
ORDER BY r.started_ms DESC, r.run_id DESC
LIMIT :limit;

-- name: set_phase
-- started_ms: the first start wins; ended_ms: cleared by a new start, set by an end (the caller computes both).
INSERT INTO migration_phases (run_id, table_name, phase, status, started_ms, ended_ms, detail, updated_ms)
VALUES (:run_id, :table_name, :phase, :status, :started_ms, :ended_ms, :detail, :updated_ms)
ON CONFLICT (run_id, table_name, phase) DO UPDATE SET
    status = excluded.status,
    started_ms = COALESCE(migration_phases.started_ms, excluded.started_ms),
    ended_ms = excluded.ended_ms,
    detail = excluded.detail,
    updated_ms = excluded.updated_ms;

-- name: run_phases
SELECT table_name, phase, status, started_ms, ended_ms, detail
FROM migration_phases WHERE run_id = :run_id
ORDER BY table_name, phase;

-- name: partition_done
INSERT INTO copy_partitions (copy_id, table_name, partition_id, start_row_hex, stop_row_hex, row_count,
                             cell_count, byte_count, started_ms, finished_ms, attempt, scope_fingerprint)
VALUES (:copy_id, :table_name, :partition_id, :start_row_hex, :stop_row_hex, :row_count,
        :cell_count, :byte_count, :started_ms, :finished_ms, :attempt, :scope_fingerprint)
ON CONFLICT (copy_id, table_name, partition_id) DO UPDATE SET
    start_row_hex = excluded.start_row_hex,
    stop_row_hex = excluded.stop_row_hex,
    row_count = excluded.row_count,
    cell_count = excluded.cell_count,
    byte_count = excluded.byte_count,
    started_ms = excluded.started_ms,
    finished_ms = excluded.finished_ms,
    attempt = excluded.attempt,
    scope_fingerprint = excluded.scope_fingerprint;

-- name: done_partitions
SELECT partition_id FROM copy_partitions WHERE copy_id = :copy_id AND table_name = :table_name;

-- name: finished_ranges
-- The finished key ranges of a copy's table (a resume subtracts them from its new plan), oldest first.
SELECT partition_id, start_row_hex, stop_row_hex, scope_fingerprint, row_count, finished_ms
FROM copy_partitions WHERE copy_id = :copy_id AND table_name = :table_name
ORDER BY finished_ms, partition_id;

-- name: copy_totals
-- CAST: PostgreSQL's SUM of BIGINT is NUMERIC, which would come back as Decimal and not serialise to JSON.
SELECT table_name, COUNT(*) AS partitions, CAST(SUM(row_count) AS BIGINT) AS row_count,
       CAST(SUM(cell_count) AS BIGINT) AS cell_count, CAST(SUM(byte_count) AS BIGINT) AS byte_count,
       MIN(started_ms) AS started_ms, MAX(finished_ms) AS finished_ms
FROM copy_partitions WHERE copy_id = :copy_id
GROUP BY table_name ORDER BY table_name;

-- name: lag_sample
INSERT INTO lag_samples (run_id, peer_id, sampled_ms, server, queue_id, recovered, size_of_log_queue,
                         age_of_last_shipped_op_ms, shipped_ops)
VALUES (:run_id, :peer_id, :sampled_ms, :server, :queue_id, :recovered, :size_of_log_queue,
        :age_of_last_shipped_op_ms, :shipped_ops)
ON CONFLICT (run_id, peer_id, sampled_ms, server, queue_id) DO UPDATE SET
    recovered = excluded.recovered,
    size_of_log_queue = excluded.size_of_log_queue,
    age_of_last_shipped_op_ms = excluded.age_of_last_shipped_op_ms,
    shipped_ops = excluded.shipped_ops;

-- name: lag_peaks
SELECT COUNT(DISTINCT sampled_ms) AS samples, MAX(age_of_last_shipped_op_ms) AS max_age_ms,
       MAX(size_of_log_queue) AS max_size_of_log_queue
FROM lag_samples WHERE run_id = :run_id;

-- name: lag_latest_snapshot
-- The whole last sample, not the last row per queue: a finished recovered queue vanishes from the metrics
-- and must not linger here with its final backlog.
SELECT peer_id, sampled_ms, server, queue_id, recovered, size_of_log_queue, age_of_last_shipped_op_ms,
       shipped_ops
FROM lag_samples
WHERE run_id = :run_id AND sampled_ms = (SELECT MAX(sampled_ms) FROM lag_samples WHERE run_id = :run_id)
ORDER BY peer_id, server, queue_id;

-- name: lag_recent
SELECT peer_id, sampled_ms, server, queue_id, recovered, size_of_log_queue, age_of_last_shipped_op_ms,
       shipped_ops
FROM lag_samples WHERE run_id = :run_id
ORDER BY sampled_ms DESC, peer_id, server, queue_id
LIMIT :limit;

-- name: quota_sample
INSERT INTO quota_samples (run_id, path, sampled_ms, space_consumed, space_quota, ns_consumed, ns_quota,
                           growth_bytes_per_s, projected_exhaustion_ms)
VALUES (:run_id, :path, :sampled_ms, :space_consumed, :space_quota, :ns_consumed, :ns_quota,
        :growth_bytes_per_s, :projected_exhaustion_ms)
ON CONFLICT (run_id, path, sampled_ms) DO UPDATE SET
    space_consumed = excluded.space_consumed,
    space_quota = excluded.space_quota,
    ns_consumed = excluded.ns_consumed,
    ns_quota = excluded.ns_quota,
    growth_bytes_per_s = excluded.growth_bytes_per_s,
    projected_exhaustion_ms = excluded.projected_exhaustion_ms;

-- name: quota_count
SELECT COUNT(*) AS samples FROM quota_samples WHERE run_id = :run_id;

-- name: quota_latest_per_path
SELECT q.path, q.sampled_ms, q.space_consumed, q.space_quota, q.ns_consumed, q.ns_quota,
       q.growth_bytes_per_s, q.projected_exhaustion_ms
FROM quota_samples q
WHERE q.run_id = :run_id
  AND q.sampled_ms = (SELECT MAX(p.sampled_ms) FROM quota_samples p WHERE p.run_id = q.run_id AND p.path = q.path)
ORDER BY q.path;

-- name: quota_recent
SELECT path, sampled_ms, space_consumed, space_quota, ns_consumed, ns_quota, growth_bytes_per_s,
       projected_exhaustion_ms
FROM quota_samples WHERE run_id = :run_id
ORDER BY sampled_ms DESC, path
LIMIT :limit;

-- name: verification
INSERT INTO verification_results (run_id, table_name, window_start_ms, window_end_ms, source_rows, target_rows,
                                  matching, content_different, only_in_source, only_in_target,
                                  sample_keys_json, verified_ms)
VALUES (:run_id, :table_name, :window_start_ms, :window_end_ms, :source_rows, :target_rows,
        :matching, :content_different, :only_in_source, :only_in_target, :sample_keys_json, :verified_ms)
ON CONFLICT (run_id, table_name, window_start_ms, window_end_ms) DO UPDATE SET
    source_rows = excluded.source_rows,
    target_rows = excluded.target_rows,
    matching = excluded.matching,
    content_different = excluded.content_different,
    only_in_source = excluded.only_in_source,
    only_in_target = excluded.only_in_target,
    sample_keys_json = excluded.sample_keys_json,
    verified_ms = excluded.verified_ms;

-- name: run_verifications
SELECT table_name, window_start_ms, window_end_ms, source_rows, target_rows, matching, content_different,
       only_in_source, only_in_target, sample_keys_json, verified_ms
FROM verification_results WHERE run_id = :run_id
ORDER BY table_name, window_start_ms, window_end_ms;

-- name: peer_note
INSERT INTO peer_notes (run_id, peer_id, noted_ms, state, reason)
VALUES (:run_id, :peer_id, :noted_ms, :state, :reason)
ON CONFLICT (run_id, peer_id, noted_ms) DO UPDATE SET
    state = excluded.state,
    reason = excluded.reason;

-- name: run_peer_notes
SELECT peer_id, noted_ms, state, reason FROM peer_notes WHERE run_id = :run_id
ORDER BY noted_ms, peer_id;

-- name: copy_plan
INSERT INTO copy_plans (copy_id, table_name, partitions, est_rows, planned_ms, replanned_ms)
VALUES (:copy_id, :table_name, :partitions, :est_rows, :planned_ms, :planned_ms)
ON CONFLICT (copy_id, table_name) DO UPDATE SET
    partitions = excluded.partitions,
    est_rows = excluded.est_rows,
    replanned_ms = excluded.replanned_ms;

-- name: copy_plans
SELECT table_name, partitions, est_rows, planned_ms, replanned_ms
FROM copy_plans WHERE copy_id = :copy_id
ORDER BY table_name;

-- name: copy_timeline
-- Finished partitions in the order they finished: the progress chart's steps (newest kept under the limit).
SELECT table_name, partition_id, row_count, started_ms, finished_ms
FROM copy_partitions WHERE copy_id = :copy_id
ORDER BY finished_ms DESC, table_name, partition_id
LIMIT :limit;

-- name: lag_series
-- One point per (sample, region server): the lag chart's lines. sizeOfLogQueue summed over the server's
-- queues of the run (recovered ones included: they are WALs still to ship), the worst age among them.
SELECT sampled_ms, server, COUNT(*) AS queues, CAST(SUM(size_of_log_queue) AS BIGINT) AS size_of_log_queue,
       MAX(age_of_last_shipped_op_ms) AS age_of_last_shipped_op_ms
FROM lag_samples WHERE run_id = :run_id
GROUP BY sampled_ms, server
ORDER BY sampled_ms DESC, server
LIMIT :limit;

-- name: quota_series
SELECT path, sampled_ms, space_consumed, space_quota, ns_consumed, ns_quota, growth_bytes_per_s,
       projected_exhaustion_ms
FROM quota_samples WHERE run_id = :run_id
ORDER BY sampled_ms DESC, path
LIMIT :limit;

-- name: throttle_decision
INSERT INTO throttle_decisions (copy_id, table_name, decided_ms, state, factor, reason, load_json)
VALUES (:copy_id, :table_name, :decided_ms, :state, :factor, :reason, :load_json)
ON CONFLICT (copy_id, table_name, decided_ms) DO UPDATE SET
    state = excluded.state,
    factor = excluded.factor,
    reason = excluded.reason,
    load_json = excluded.load_json;

-- name: throttle_decisions
SELECT copy_id, table_name, decided_ms, state, factor, reason, load_json
FROM throttle_decisions WHERE copy_id = :copy_id
ORDER BY decided_ms, table_name;

-- name: latest_run_of_peer
-- The newest run (not the watch's) that used a peer on a source cluster: the migration an alert names.
SELECT run_id, dag_id, status, started_ms
FROM migration_runs WHERE source_key = :source_key AND peer_id = :peer_id AND plan_name <> 'watch'
ORDER BY started_ms DESC, run_id
LIMIT 1;

-- name: alert_message
INSERT INTO alert_messages (message_key, alert_key, event, seq, kind, cluster_key, conn_id, dag_run_id, run_id,
                            created_ms, subject, body, facts_json)
VALUES (:message_key, :alert_key, :event, :seq, :kind, :cluster_key, :conn_id, :dag_run_id, :run_id,
        :created_ms, :subject, :body, :facts_json)
ON CONFLICT (message_key) DO NOTHING;

-- name: alert_delivery
INSERT INTO alert_deliveries (message_key, channel, attempts) VALUES (:message_key, :channel, 0)
ON CONFLICT (message_key, channel) DO NOTHING;

-- name: alert_history
-- A cluster's watch alerts, every start and end: which are open, and the next occurrence number.
SELECT alert_key, event, seq, created_ms, dag_run_id, run_id, facts_json
FROM alert_messages WHERE cluster_key = :cluster_key AND event IN ('raised', 'cleared')
ORDER BY alert_key, seq, created_ms;

-- name: take_delivery
-- A sender's lease on one delivery: taken only when unsent and not held by a live lease.
UPDATE alert_deliveries SET claimed_ms = :now_ms, attempts = attempts + 1
WHERE message_key = :message_key AND channel = :channel AND sent_ms IS NULL
  AND (claimed_ms IS NULL OR claimed_ms < :stale_ms);

-- name: delivery_sent
UPDATE alert_deliveries SET sent_ms = :sent_ms, last_error = NULL
WHERE message_key = :message_key AND channel = :channel;

-- name: delivery_failed
UPDATE alert_deliveries SET claimed_ms = NULL, last_error = :error
WHERE message_key = :message_key AND channel = :channel AND sent_ms IS NULL;

-- name: pending_deliveries
SELECT d.message_key, d.channel, d.attempts, d.last_error, m.subject, m.body, m.facts_json, m.created_ms
FROM alert_deliveries d JOIN alert_messages m ON m.message_key = d.message_key
WHERE d.sent_ms IS NULL AND m.created_ms >= :since_ms AND (d.claimed_ms IS NULL OR d.claimed_ms < :stale_ms)
ORDER BY m.created_ms, d.message_key, d.channel;

-- name: alert_messages
SELECT m.message_key, m.alert_key, m.event, m.seq, m.kind, m.cluster_key, m.conn_id, m.dag_run_id, m.run_id,
       m.created_ms, m.subject, m.body, m.facts_json
FROM alert_messages m WHERE m.created_ms >= :since_ms
ORDER BY m.created_ms, m.message_key;

-- name: alert_deliveries_of
SELECT channel, attempts, claimed_ms, sent_ms, last_error
FROM alert_deliveries WHERE message_key = :message_key
ORDER BY channel;

-- name: switch_guard_ensure
INSERT INTO switch_guards (source_key, updated_ms) VALUES (:source_key, :now_ms)
ON CONFLICT (source_key) DO NOTHING;

-- name: switch_lock
-- Take the lease when it is free, already ours, or expired (its holder died); the caller reads the row count.
UPDATE switch_guards SET lock_owner = :owner, lock_expires_ms = :expires_ms, updated_ms = :now_ms
WHERE source_key = :source_key
  AND (lock_owner IS NULL OR lock_owner = :owner OR lock_expires_ms < :now_ms);

-- name: switch_unlock
UPDATE switch_guards SET lock_owner = NULL, lock_expires_ms = NULL, updated_ms = :now_ms
WHERE source_key = :source_key AND lock_owner = :owner;

-- name: switch_guard
SELECT source_key, split_found, merge_found, normalizer_found, found_ms, lock_owner, lock_expires_ms, updated_ms
FROM switch_guards WHERE source_key = :source_key;

-- name: switch_found
-- Only under the lease: the state found is written once per holding period and cleared by the restore.
UPDATE switch_guards SET split_found = :split_found, merge_found = :merge_found,
                         normalizer_found = :normalizer_found, found_ms = :found_ms, updated_ms = :now_ms
WHERE source_key = :source_key AND lock_owner = :owner;

-- name: switch_hold
INSERT INTO switch_holds (source_key, holder, run_id, held_ms) VALUES (:source_key, :holder, :run_id, :held_ms)
ON CONFLICT (source_key, holder) DO UPDATE SET run_id = excluded.run_id, held_ms = excluded.held_ms;

-- name: switch_release
DELETE FROM switch_holds WHERE source_key = :source_key AND holder = :holder;

-- name: switch_holds
SELECT holder, run_id, held_ms FROM switch_holds WHERE source_key = :source_key ORDER BY held_ms, holder;

-- name: run_switch_holds
SELECT source_key, holder, held_ms FROM switch_holds WHERE run_id = :run_id ORDER BY source_key, holder;

-- name: sizing
INSERT INTO copy_sizings (run_id, table_name, sized_ms, sizing_json)
VALUES (:run_id, :table_name, :sized_ms, :sizing_json)
ON CONFLICT (run_id, table_name) DO UPDATE SET sized_ms = excluded.sized_ms, sizing_json = excluded.sizing_json;

-- name: run_sizings
SELECT table_name, sized_ms, sizing_json FROM copy_sizings WHERE run_id = :run_id ORDER BY table_name;

-- name: initial_copy
-- The first decision stays (DO NOTHING): a retried preflight cannot switch a table between the two paths.
INSERT INTO initial_copies (run_id, table_name, method, reason, decided_ms)
VALUES (:run_id, :table_name, :method, :reason, :decided_ms)
ON CONFLICT (run_id, table_name) DO NOTHING;

-- name: initial_copies
SELECT table_name, method, reason, decided_ms FROM initial_copies WHERE run_id = :run_id ORDER BY table_name;

-- name: snapshot_export_start
INSERT INTO snapshot_exports (copy_id, table_name, snapshot_name, source_key, target_key, state, started_ms,
                              updated_ms)
VALUES (:copy_id, :table_name, :snapshot_name, :source_key, :target_key, 'started', :now_ms, :now_ms)
ON CONFLICT (copy_id, table_name) DO NOTHING;

-- name: snapshot_export_state
-- The timestamps of a state are set once (COALESCE): a repeated step keeps the first instant.
UPDATE snapshot_exports SET
    state = :state,
    detail = COALESCE(:detail, detail),
    updated_ms = :now_ms,
    snapshot_taken_ms = CASE WHEN :state = 'snapshot_taken' THEN COALESCE(snapshot_taken_ms, :now_ms)
                             ELSE snapshot_taken_ms END,
    cloned_ms = CASE WHEN :state = 'cloned' THEN COALESCE(cloned_ms, :now_ms) ELSE cloned_ms END,
    cleaned_ms = CASE WHEN :state = 'cleaned' THEN COALESCE(cleaned_ms, :now_ms) ELSE cleaned_ms END
WHERE copy_id = :copy_id AND table_name = :table_name;

-- name: snapshot_export_progress
UPDATE snapshot_exports SET
    files_total = :files_total, bytes_total = :bytes_total, files_done = :files_done, bytes_done = :bytes_done,
    bytes_per_s = :bytes_per_s, eta_s = :eta_s, updated_ms = :now_ms
WHERE copy_id = :copy_id AND table_name = :table_name;

-- name: snapshot_export
SELECT copy_id, table_name, snapshot_name, source_key, target_key, state, files_total, bytes_total, files_done,
       bytes_done, bytes_per_s, eta_s, detail, started_ms, updated_ms, snapshot_taken_ms, cloned_ms, cleaned_ms
FROM snapshot_exports WHERE copy_id = :copy_id AND table_name = :table_name;

-- name: snapshot_exports_of_copy
SELECT copy_id, table_name, snapshot_name, source_key, target_key, state, files_total, bytes_total, files_done,
       bytes_done, bytes_per_s, eta_s, detail, started_ms, updated_ms, snapshot_taken_ms, cloned_ms, cleaned_ms
FROM snapshot_exports WHERE copy_id = :copy_id ORDER BY table_name;

-- name: snapshot_file_done
INSERT INTO snapshot_files (copy_id, table_name, relative_path, snapshot_name, size, status, found_in, verified_by,
                            checksum, attempts, seconds, finished_ms)
VALUES (:copy_id, :table_name, :relative_path, :snapshot_name, :size, :status, :found_in, :verified_by, :checksum,
        :attempts, :seconds, :finished_ms)
ON CONFLICT (copy_id, table_name, relative_path) DO UPDATE SET
    snapshot_name = excluded.snapshot_name,
    size = excluded.size,
    status = excluded.status,
    found_in = excluded.found_in,
    verified_by = excluded.verified_by,
    checksum = excluded.checksum,
    attempts = excluded.attempts,
    seconds = excluded.seconds,
    finished_ms = excluded.finished_ms;

-- name: snapshot_files
SELECT relative_path, snapshot_name, size, status, found_in, verified_by, checksum, attempts, seconds, finished_ms
FROM snapshot_files WHERE copy_id = :copy_id AND table_name = :table_name
ORDER BY finished_ms, relative_path;

-- name: snapshot_files_totals
-- CAST: PostgreSQL's SUM of BIGINT is NUMERIC.
SELECT table_name, COUNT(*) AS files, CAST(SUM(size) AS BIGINT) AS bytes,
       CAST(SUM(CASE WHEN found_in = 'archive' THEN 1 ELSE 0 END) AS BIGINT) AS found_in_archive,
       MIN(finished_ms) AS first_ms, MAX(finished_ms) AS last_ms
FROM snapshot_files WHERE copy_id = :copy_id
GROUP BY table_name ORDER BY table_name;

-- name: job_summary_put
-- A driver that writes again under the same key (a job re-run by hand with the same arguments) replaces it.
INSERT INTO job_summaries (summary_key, job, written_ms, summary)
VALUES (:summary_key, :job, :written_ms, :summary)
ON CONFLICT (summary_key) DO UPDATE SET job = excluded.job, written_ms = excluded.written_ms,
                                        summary = excluded.summary;

-- name: job_summary
SELECT job, written_ms, summary FROM job_summaries WHERE summary_key = :summary_key;

-- name: job_summary_delete
DELETE FROM job_summaries WHERE summary_key = :summary_key;

-- The oldWALs watchdog's lease, per run and cluster (hbase_migration/migration/quota.py)

-- name: watch_ensure
INSERT INTO oldwals_watch (run_id, cluster_key, readings, namenode_calls, updated_ms)
VALUES (:run_id, :cluster_key, 0, 0, :now_ms)
ON CONFLICT (run_id, cluster_key) DO NOTHING;

-- name: watch_take
-- Take (or renew) the lease when it is free, ours, or expired; the caller reads the row count.
UPDATE oldwals_watch SET owner = :owner, expires_ms = :expires_ms, updated_ms = :now_ms
WHERE run_id = :run_id AND cluster_key = :cluster_key
  AND (owner IS NULL OR owner = :owner OR expires_ms < :now_ms);

-- name: watch_row
SELECT run_id, cluster_key, owner, expires_ms, plan_json, reading_json, read_ms, readings, namenode_calls, updated_ms
FROM oldwals_watch WHERE run_id = :run_id AND cluster_key = :cluster_key;

-- name: watch_rows
SELECT run_id, cluster_key, owner, expires_ms, plan_json, reading_json, read_ms, readings, namenode_calls, updated_ms
FROM oldwals_watch WHERE run_id = :run_id ORDER BY cluster_key;

-- name: watch_reading
-- Only under the lease: a watchdog that lost it (it stalled past its expiry) records nothing.
UPDATE oldwals_watch SET plan_json = :plan_json, reading_json = :reading_json, read_ms = :read_ms,
                         readings = readings + 1, namenode_calls = namenode_calls + :calls, updated_ms = :now_ms
WHERE run_id = :run_id AND cluster_key = :cluster_key AND owner = :owner;

-- name: watch_release
UPDATE oldwals_watch SET owner = NULL, expires_ms = NULL, updated_ms = :now_ms
WHERE run_id = :run_id AND cluster_key = :cluster_key AND owner = :owner;

-- A run's batches and their slots (hbase_migration/migration/batches.py)

-- name: batch_insert
INSERT INTO migration_batches (run_id, batch, batch_index, peer_id, tables_json, bytes, planned_ms)
VALUES (:run_id, :batch, :batch_index, :peer_id, :tables_json, :bytes, :planned_ms)
ON CONFLICT (run_id, batch) DO NOTHING;

-- name: run_batches
SELECT b.batch, b.batch_index, b.peer_id, b.tables_json, b.bytes, b.t0_ms, b.planned_ms, s.slot, s.taken_ms
FROM migration_batches b
LEFT JOIN batch_slots s ON s.run_id = b.run_id AND s.batch = b.batch
WHERE b.run_id = :run_id
ORDER BY b.batch_index;

-- name: batch_t0
UPDATE migration_batches
SET t0_ms = CASE WHEN t0_ms IS NULL OR :t0_ms < t0_ms THEN :t0_ms ELSE t0_ms END
WHERE run_id = :run_id AND batch = :batch;

-- name: batch_slot_of
SELECT slot FROM batch_slots WHERE run_id = :run_id AND batch = :batch;

-- name: batch_slot_take
INSERT INTO batch_slots (run_id, slot, batch, taken_ms) VALUES (:run_id, :slot, :batch, :taken_ms)
ON CONFLICT DO NOTHING;

-- name: batch_slot_release
DELETE FROM batch_slots WHERE run_id = :run_id AND batch = :batch;

-- name: batch_slots_taken
SELECT slot, batch, taken_ms FROM batch_slots WHERE run_id = :run_id ORDER BY slot;
