package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellBuilderFactory;
import org.apache.hadoop.hbase.CellBuilderType;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One partition's copy on the native path: HBase's CopyTable with {@code --all.cells} (a raw scan; its {@code
 * Import.Importer} writing each result back as a Put of its puts and a Delete of its delete markers), every cell
 * with its own timestamp and type. So a delete marker the source holds masks, on the target too, whatever the
 * replication backlog later replays beneath it; a KEEP_DELETED_CELLS family keeps its deleted cells. With {@code
 * versions} N the newest N puts of each column that the family keeps are copied (and every marker), else every
 * cell the source holds. Each mutation carries the source cluster's id, as the Importer's do, so a reverse peer
 * (target to source) does not ship the copy back.
 *
 * <p>Memory: the reader's read-ahead and the mutator's write buffer ({@code write_batch_bytes}), never a
 * partition or a whole row (a wide row comes in slices of {@code scan_batch_cells}, each its own mutation).
 */
final class CopyTask {
  private static final Logger LOG = LoggerFactory.getLogger(CopyTask.class);

  private final JsonNode spec;
  private final ClusterSpec source;
  private final ClusterSpec target;
  private final ReadSpec read;
  private final Map<String, byte[]> renames = new HashMap<>();
  private final Map<String, Retention.Rule> rules;
  private final List<UUID> clusterIds;

  CopyTask(JsonNode spec) {
    this.spec = spec;
    this.source = ClusterSpec.fromJson(spec.get("source"));
    this.target = ClusterSpec.fromJson(spec.get("target"));
    ReadSpec asked = ReadSpec.fromJson(spec, spec.get("table").asText(), true, true);
    // Every version is read: the newest N a family keeps are chosen here, past the markers and masked puts that a
    // raw scan's own version count would include.
    this.read = new ReadSpec(asked.table, asked.families, asked.startMs, asked.endMs, 0, true, asked.batchRows,
        asked.batchCells, asked.maxResultBytes);
    JsonNode pairs = spec.get("families");
    if (pairs != null) {
      for (JsonNode pair : pairs) {
        if (!pair.get(0).asText().equals(pair.get(1).asText())) {
          renames.put(Bytes.toStringBinary(Bytes.toBytes(pair.get(0).asText())), Bytes.toBytes(pair.get(1).asText()));
        }
      }
    }
    this.rules = VerifyTask.rules(spec.get("source_families"));
    String id = Json.getText(spec, "source_cluster_id");
    this.clusterIds = id == null ? null : Collections.singletonList(UUID.fromString(id));
  }

  ObjectNode run(JsonNode partition) throws Exception {
    long started = System.nanoTime();
    byte[] start = Json.unhex(partition.get("start_row").asText());
    byte[] stop = Json.unhex(partition.get("stop_row").asText());
    int index = partition.get("index").asInt();
    String where = "#" + index + " [" + Bytes.toStringBinary(start) + ", "
        + (stop.length == 0 ? "<end>" : Bytes.toStringBinary(stop)) + ")";
    long estRows = Json.getLong(partition, "est_rows", -1);
    double logEveryS = Json.getDouble(spec, "log_every_s", 30);
    int versions = (int) Json.getLong(spec, "versions", 0);
    Retention retention = versions > 0 ? new Retention(rules, versions) : null;
    Pacing.TokenBucket rowCap = bucket("rows_per_s");
    Pacing.TokenBucket byteCap = bucket("bytes_per_s");
    String loadUrl = Json.getText(spec, "load_url");
    Pacing.LoadGate gate = loadUrl == null ? null : new Pacing.LoadGate(loadUrl, 1.0, 0.5, Pacing.httpFetch(),
        CopyTask::now, CopyTask::sleep);
    if (gate != null) {
      gate.check(); // the copy may have given up on an overloaded source: fail before scanning
    }
    Connection src = Connections.get(source);
    Connection tgt = Connections.get(target);
    long rows = 0, scannedRows = 0, cells = 0, markers = 0, bytes = 0, mutations = 0;
    double throttled = 0;
    int batchResults = 0;
    long batchRows = 0, batchBytes = 0;
    double lastLog = now();
    byte[] lastRow = null;
    byte[] lastCopiedRow = null;
    BufferedMutatorParams params = new BufferedMutatorParams(TableName.valueOf(spec.get("target_table").asText()))
        .writeBufferSize(Json.getLong(spec, "write_batch_bytes", 4L << 20));
    try (RangeReader reader = new RangeReader(src, read, start, stop);
        BufferedMutator mutator = tgt.getBufferedMutator(params)) {
      for (Result r = reader.next(); r != null; r = reader.next()) {
        byte[] row = r.getRow();
        boolean newRow = lastRow == null || !Bytes.equals(row, lastRow);
        if (newRow) {
          scannedRows++;
          batchRows++;
          lastRow = row;
        }
        Put put = null;
        Delete delete = null;
        for (Cell cell : r.rawCells()) {
          if (retention != null && retention.classify(cell) == Retention.HIDDEN) {
            continue;
          }
          Cell out = renamed(cell);
          if (cell.getType() == Cell.Type.Put) {
            put = put == null ? new Put(row) : put;
            put.add(out);
          } else {
            delete = delete == null ? new Delete(row) : delete;
            delete.add(out);
            markers++;
          }
          long size = cell.getFamilyLength() + 1 + cell.getQualifierLength() + cell.getValueLength()
              + cell.getRowLength() + 8;
          cells++;
          bytes += size;
          batchBytes += size;
        }
        if (put != null || delete != null) {
          if (lastCopiedRow == null || !Bytes.equals(row, lastCopiedRow)) {
            rows++;
            lastCopiedRow = row;
          }
        }
        if (put != null) {
          if (clusterIds != null) {
            put.setClusterIds(clusterIds);
          }
          mutator.mutate(put);
          mutations++;
        }
        if (delete != null) {
          if (clusterIds != null) {
            delete.setClusterIds(clusterIds);
          }
          mutator.mutate(delete);
          mutations++;
        }
        if (++batchResults >= read.batchRows) {
          // results, not rows, pace the copy: each slice of a wide row is as much work as a narrow row
          throttled += pace(rowCap, byteCap, gate, batchResults, batchBytes, batchRows);
          batchResults = 0;
          batchRows = 0;
          batchBytes = 0;
          double t = now();
          if (t - lastLog >= logEveryS) {
            lastLog = t;
            progress(where, rows, cells, markers, bytes, started, estRows, false);
          }
        }
      }
      throttled += pace(rowCap, byteCap, gate, batchResults, batchBytes, batchRows);
      mutator.flush(); // every write acknowledged: only then is the partition done
    }
    ObjectNode out = Json.object();
    out.put("partition_id", partition.get("partition_id").asText());
    out.put("index", index);
    out.put("table", partition.get("table").asText());
    out.put("start_row", Json.hex(start));
    out.put("stop_row", Json.hex(stop));
    out.put("status", "copied");
    out.put("rows", rows);
    out.put("cells", cells);
    out.put("delete_markers", markers);
    out.put("bytes", bytes);
    out.put("scanned_rows", scannedRows);
    out.put("write_calls", mutations);
    out.put("retries", 0);
    out.put("throttled_s", Math.round(throttled * 1000) / 1000.0);
    out.put("elapsed_s", VerifyTask.seconds(started));
    progress(where, rows, cells, markers, bytes, started, estRows, true);
    return out;
  }

  private Pacing.TokenBucket bucket(String field) {
    double rate = Json.getDouble(spec, field, 0);
    return rate > 0 ? new Pacing.TokenBucket(rate, CopyTask::now, CopyTask::sleep) : null;
  }

  private static double pace(Pacing.TokenBucket rowCap, Pacing.TokenBucket byteCap, Pacing.LoadGate gate,
      int results, long bytes, long rows) {
    double slept = 0;
    if (results == 0) {
      return 0;
    }
    if (rowCap != null) {
      slept += rowCap.acquire(results);
    }
    if (byteCap != null) {
      slept += byteCap.acquire(bytes);
    }
    if (gate != null) {
      slept += gate.afterBatch(rows);
    }
    return slept;
  }

  private Cell renamed(Cell cell) {
    if (renames.isEmpty()) {
      return cell;
    }
    byte[] family = renames.get(Bytes.toStringBinary(CellUtil.cloneFamily(cell)));
    if (family == null) {
      return cell;
    }
    return CellBuilderFactory.create(CellBuilderType.DEEP_COPY).setRow(CellUtil.cloneRow(cell)).setFamily(family)
        .setQualifier(CellUtil.cloneQualifier(cell)).setTimestamp(cell.getTimestamp()).setType(cell.getType())
        .setValue(CellUtil.cloneValue(cell)).build();
  }

  private static void progress(String where, long rows, long cells, long markers, long bytes, long started,
      long estRows, boolean done) {
    double elapsed = (System.nanoTime() - started) / 1e9;
    double rate = elapsed > 0 ? rows / elapsed : 0;
    String eta = done || estRows <= 0 || rows <= 0 || rows >= estRows ? ""
        : String.format(", ETA %.0fs", elapsed * (estRows - rows) / rows);
    LOG.info(String.format("partition %s %s (native, raw): %d rows, %d cells (%d delete markers), %.1f MiB "
        + "(%.0f rows/s)%s", where, done ? "done" : "progress", rows, cells, markers, bytes / 1048576.0, rate, eta));
  }

  static double now() {
    return System.nanoTime() / 1e9;
  }

  static void sleep(double seconds) {
    try {
      Thread.sleep((long) Math.ceil(seconds * 1000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
