package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * What a {@link RangeReader} reads of a table, whatever the key range: the families, the time window {@code
 * [startMs, endMs)}, how many versions per column, raw or not, and how it is fetched (rows per scanner call,
 * cells per result: {@code Scan.setBatch}, so a wide row comes in slices; bytes per call).
 */
public final class ReadSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  public final String table;
  public final List<byte[]> families; // empty: every family
  public final Long startMs; // null: from 0
  public final Long endMs; // null: no end
  public final int versions; // 0: every version the scan can see
  public final boolean raw;
  public final int batchRows;
  public final int batchCells; // 0: whole rows
  public final long maxResultBytes;

  public ReadSpec(String table, List<byte[]> families, Long startMs, Long endMs, int versions, boolean raw,
      int batchRows, int batchCells, long maxResultBytes) {
    this.table = table;
    this.families = families;
    this.startMs = startMs;
    this.endMs = endMs;
    this.versions = versions;
    this.raw = raw;
    this.batchRows = batchRows;
    this.batchCells = batchCells;
    this.maxResultBytes = maxResultBytes;
  }

  /** From a task spec's JSON: {@code families} as [[source, target], ...], the other fields as the Python names. */
  static ReadSpec fromJson(JsonNode spec, String table, boolean sourceSide, boolean raw) {
    List<byte[]> families = new ArrayList<>();
    JsonNode pairs = spec.get("families");
    if (pairs != null) {
      for (JsonNode pair : pairs) {
        families.add(Bytes.toBytes(pair.get(sourceSide ? 0 : 1).asText()));
      }
    }
    JsonNode start = spec.get("start_ms");
    JsonNode end = spec.get("end_ms");
    return new ReadSpec(table, families, start == null || start.isNull() ? null : start.asLong(),
        end == null || end.isNull() ? null : end.asLong(), (int) Json.getLong(spec, "versions", 0), raw,
        (int) Json.getLong(spec, "scan_batch_rows", 500), (int) Json.getLong(spec, "scan_batch_cells", 0),
        Json.getLong(spec, "max_result_bytes", 4L << 20));
  }

  ReadSpec withFamilies(List<byte[]> only) {
    return new ReadSpec(table, only, startMs, endMs, versions, raw, batchRows, batchCells, maxResultBytes);
  }

  /** The scan of {@code [startRow, stopRow)} (an empty stop: to the end). */
  public Scan scan(byte[] startRow, byte[] stopRow) {
    Scan scan = new Scan().withStartRow(startRow).withStopRow(stopRow);
    for (byte[] family : families) {
      scan.addFamily(family);
    }
    try {
      scan.setTimeRange(startMs == null ? 0L : startMs, endMs == null ? HConstants.LATEST_TIMESTAMP : endMs);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("time range [" + startMs + ", " + endMs + "): " + e.getMessage(), e);
    }
    if (versions > 0) {
      scan.readVersions(versions);
    } else {
      scan.readAllVersions();
    }
    scan.setRaw(raw);
    scan.setCaching(batchRows);
    if (batchCells > 0) {
      scan.setBatch(batchCells);
    }
    scan.setMaxResultSize(maxResultBytes);
    scan.setCacheBlocks(false); // a full scan would only push the hot blocks out of the region servers' caches
    return scan;
  }
}
