package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One partition's verification on the native path (hbase_migration/data/verify.py says what a verification is):
 * both sides read raw, at once, and merge-joined ({@link Comparer}); the differing rows (up to {@code
 * max_diff_rows}; the counts stay exact) compared again after {@code recompare_sleep_s}, twice as long each round,
 * while a round still sees one change (edits in flight). Level "rows" counts each side's rows instead, as
 * RowCounter does. The verdict is the JSON of the Python side's {@code PartitionVerdict}.
 */
final class VerifyTask {
  private static final Logger LOG = LoggerFactory.getLogger(VerifyTask.class);
  private static final int VERSIONS_PER_ROW = 10; // rowdiff.VERSIONS_PER_ROW

  private final JsonNode spec;
  private final ClusterSpec source;
  private final ClusterSpec target;
  private final ReadSpec sourceRead;
  private final ReadSpec targetRead;
  private final Map<String, byte[]> renames = new HashMap<>();
  private final Map<String, Retention.Rule> sourceRules;
  private final Map<String, Retention.Rule> targetRules;
  private final boolean perFamily;

  VerifyTask(JsonNode spec) {
    this.spec = spec;
    this.source = ClusterSpec.fromJson(spec.get("source"));
    this.target = ClusterSpec.fromJson(spec.get("target"));
    this.sourceRead = ReadSpec.fromJson(spec, spec.get("table").asText(), true, true);
    this.targetRead = ReadSpec.fromJson(spec, spec.get("target_table").asText(), false, true);
    JsonNode pairs = spec.get("families");
    if (pairs != null) {
      for (JsonNode pair : pairs) {
        if (!pair.get(0).asText().equals(pair.get(1).asText())) {
          renames.put(Bytes.toStringBinary(Bytes.toBytes(pair.get(0).asText())), Bytes.toBytes(pair.get(1).asText()));
        }
      }
    }
    this.sourceRules = rules(spec.get("source_families"));
    this.targetRules = rules(spec.get("target_families"));
    this.perFamily = spec.path("per_family").asBoolean(false);
  }

  static Map<String, Retention.Rule> rules(JsonNode families) {
    Map<String, Retention.Rule> out = new HashMap<>();
    if (families != null) {
      for (Iterator<Map.Entry<String, JsonNode>> it = families.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        out.put(Bytes.toStringBinary(Bytes.toBytes(e.getKey())), new Retention.Rule(
            e.getValue().get("versions").asInt(), e.getValue().path("keep_deleted_cells").asBoolean(false)));
      }
    }
    return out;
  }

  /** Rows kept for the re-compare, by status, with their differing cells (VerifyOptions' max_diff_rows). */
  private static final class Tally implements Comparer.Sink {
    final Map<String, Long> counts = new LinkedHashMap<>();
    final TreeMap<ByteBuffer, String> differing = new TreeMap<>();
    final Map<ByteBuffer, List<Comparer.Diff>> versions = new HashMap<>();
    final Set<ByteBuffer> wide = new HashSet<>();
    final int maxKept;
    boolean truncated;

    Tally(int maxKept) {
      this.maxKept = maxKept;
      for (String s : new String[] {Comparer.MATCHING, Comparer.CONTENT_DIFFERENT, Comparer.ONLY_IN_SOURCE,
          Comparer.ONLY_IN_TARGET}) {
        counts.put(s, 0L);
      }
    }

    @Override
    public void row(byte[] row, String status, List<Comparer.Diff> diffs, boolean isWide) {
      counts.merge(status, 1L, Long::sum);
      if (status.equals(Comparer.MATCHING)) {
        return;
      }
      if (differing.size() >= maxKept) {
        truncated = true;
        return;
      }
      ByteBuffer key = ByteBuffer.wrap(row);
      differing.put(key, status);
      versions.put(key, diffs);
      if (isWide) {
        wide.add(key);
      }
    }

    void reclassify(ByteBuffer row, String status, List<Comparer.Diff> diffs) {
      String old = differing.remove(row);
      versions.remove(row);
      counts.merge(old, -1L, Long::sum);
      if (status == null) {
        return; // gone from both sides
      }
      counts.merge(status, 1L, Long::sum);
      if (!status.equals(Comparer.MATCHING)) {
        differing.put(row, status);
        versions.put(row, diffs);
      }
    }

    long sourceRows() {
      return counts.get(Comparer.MATCHING) + counts.get(Comparer.CONTENT_DIFFERENT)
          + counts.get(Comparer.ONLY_IN_SOURCE);
    }

    long targetRows() {
      return counts.get(Comparer.MATCHING) + counts.get(Comparer.CONTENT_DIFFERENT)
          + counts.get(Comparer.ONLY_IN_TARGET);
    }
  }

  ObjectNode run(JsonNode partition) throws Exception {
    long started = System.nanoTime();
    byte[] start = Json.unhex(partition.get("start_row").asText());
    byte[] stop = Json.unhex(partition.get("stop_row").asText());
    ObjectNode out = Json.object();
    out.put("partition_id", partition.get("partition_id").asText());
    out.put("index", partition.get("index").asInt());
    out.put("start_row", Json.hex(start));
    out.put("stop_row", Json.hex(stop));
    out.put("status", "verified");
    Connection src = Connections.get(source);
    Connection tgt = Connections.get(target);
    if ("rows".equals(Json.getText(spec, "level"))) {
      CompletableFuture<Long> sourceRows = CompletableFuture.supplyAsync(() -> countRows(src, sourceRead, start, stop));
      long targetRows = countRows(tgt, targetRead, start, stop);
      out.put("source_rows", sourceRows.get());
      out.put("target_rows", targetRows);
      out.put("elapsed_s", seconds(started));
      return out;
    }
    Tally tally = new Tally((int) Json.getLong(spec, "max_diff_rows", 10_000));
    Comparer comparer = new Comparer(VERSIONS_PER_ROW);
    try (SideStream s = new SideStream(src, sourceRead, start, stop, renames, sourceRules, perFamily);
        SideStream t = new SideStream(tgt, targetRead, start, stop, Map.of(), targetRules, false)) {
      comparer.compare(s, t, tally);
    }
    double sleep = Json.getDouble(spec, "recompare_sleep_s", 0);
    int rounds = (int) Json.getLong(spec, "recompare_rounds", 3);
    int recompared = 0;
    Set<ByteBuffer> changed = new HashSet<>();
    if (sleep > 0 && !tally.differing.isEmpty()) {
      recompared = tally.differing.size();
      for (int round = 0; round < rounds && !tally.differing.isEmpty(); round++) {
        Thread.sleep((long) (sleep * 1000 * (1L << round)));
        boolean moved = false;
        for (ByteBuffer row : new ArrayList<>(tally.differing.keySet())) {
          RowVerdict now = compareRow(src, tgt, row.array(), comparer);
          List<Comparer.Diff> before = tally.versions.get(row);
          if (!java.util.Objects.equals(now.status, tally.differing.get(row)) || !sameDiffs(before, now.diffs)) {
            changed.add(row);
            moved = true;
          }
          tally.reclassify(row, now.status, now.diffs);
        }
        if (!moved) {
          break; // nothing in flight any more: what still differs stays different
        }
      }
    }
    ObjectNode counts = out.putObject("counts");
    tally.counts.forEach(counts::put);
    out.put("source_rows", tally.sourceRows());
    out.put("target_rows", tally.targetRows());
    out.put("source_cells", comparer.sourceCells);
    out.put("target_cells", comparer.targetCells);
    out.put("hidden_source_cells", comparer.hiddenSource);
    out.put("hidden_target_cells", comparer.hiddenTarget);
    int sampleLimit = (int) Json.getLong(spec, "sample_limit", 20);
    ArrayNode differing = out.putArray("differing");
    ArrayNode versions = out.putArray("versions");
    Map<String, Integer> perStatus = new HashMap<>();
    for (Map.Entry<ByteBuffer, String> e : tally.differing.entrySet()) {
      if (perStatus.merge(e.getValue(), 1, Integer::sum) <= sampleLimit) {
        differing.addArray().add(Json.hex(e.getKey().array())).add(e.getValue());
      }
      for (Comparer.Diff d : tally.versions.getOrDefault(e.getKey(), List.of())) {
        if (versions.size() < sampleLimit) {
          ArrayNode v = versions.addArray().add(Json.hex(e.getKey().array())).add(Json.hex(d.column))
              .add(d.timestamp).add(d.kind);
          v.add(d.type);
        }
      }
    }
    out.put("truncated", tally.truncated);
    out.put("recompared", recompared);
    out.put("recompare_changed", changed.size());
    out.put("wide_rows", tally.wide.size());
    out.put("elapsed_s", seconds(started));
    long bad = tally.counts.get(Comparer.CONTENT_DIFFERENT) + tally.counts.get(Comparer.ONLY_IN_SOURCE)
        + tally.counts.get(Comparer.ONLY_IN_TARGET);
    LOG.info("partition #{} verified (native, raw): {} source rows, {} target rows, {} matching, {} different "
        + "({} content, {} only in source, {} only in target), {} and {} cells compared in {}s",
        partition.get("index").asInt(), tally.sourceRows(), tally.targetRows(), tally.counts.get(Comparer.MATCHING),
        bad, tally.counts.get(Comparer.CONTENT_DIFFERENT), tally.counts.get(Comparer.ONLY_IN_SOURCE),
        tally.counts.get(Comparer.ONLY_IN_TARGET), comparer.sourceCells, comparer.targetCells,
        out.get("elapsed_s").asDouble());
    return out;
  }

  private static boolean sameDiffs(List<Comparer.Diff> a, List<Comparer.Diff> b) {
    if (a == null || b == null) {
      return a == b || (a == null ? b.isEmpty() : a.isEmpty());
    }
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      Comparer.Diff x = a.get(i);
      Comparer.Diff y = b.get(i);
      if (!Bytes.equals(x.column, y.column) || x.timestamp != y.timestamp || !x.kind.equals(y.kind)) {
        return false;
      }
    }
    return true;
  }

  private static final class RowVerdict implements Comparer.Sink {
    String status;
    List<Comparer.Diff> diffs = List.of();

    @Override
    public void row(byte[] row, String status, List<Comparer.Diff> diffs, boolean wide) {
      this.status = status;
      this.diffs = diffs;
    }
  }

  /** One row again, both sides read at once, in slices (a wide row is never fetched whole). */
  private RowVerdict compareRow(Connection src, Connection tgt, byte[] row, Comparer counters) {
    byte[] stop = Bytes.add(row, new byte[] {0});
    RowVerdict verdict = new RowVerdict();
    Comparer once = new Comparer(VERSIONS_PER_ROW);
    try (SideStream s = new SideStream(src, sourceRead, row, stop, renames, sourceRules, perFamily);
        SideStream t = new SideStream(tgt, targetRead, row, stop, Map.of(), targetRules, false)) {
      once.compare(s, t, verdict);
    }
    return verdict;
  }

  /** Rows with a cell in the window: RowCounter's scan (not raw, one key-only cell per row). */
  static long countRows(Connection connection, ReadSpec read, byte[] start, byte[] stop) {
    ReadSpec plain = new ReadSpec(read.table, read.families, read.startMs, read.endMs, 1, false,
        Math.max(read.batchRows, 2000), 0, read.maxResultBytes);
    long rows = 0;
    byte[] last = null;
    try (CountingReader reader = new CountingReader(connection, plain, start, stop)) {
      for (Result r = reader.next(); r != null; r = reader.next()) {
        if (last == null || !Bytes.equals(last, r.getRow())) {
          rows++;
          last = r.getRow();
        }
      }
    }
    return rows;
  }

  /** A key-only, first-cell-only read (RowCounter's filters). */
  private static final class CountingReader implements AutoCloseable {
    private final org.apache.hadoop.hbase.client.Table table;
    private final org.apache.hadoop.hbase.client.ResultScanner scanner;

    CountingReader(Connection connection, ReadSpec spec, byte[] start, byte[] stop) {
      try {
        table = connection.getTable(org.apache.hadoop.hbase.TableName.valueOf(spec.table));
        org.apache.hadoop.hbase.client.Scan scan = spec.scan(start, stop);
        scan.setFilter(new FilterList(FilterList.Operator.MUST_PASS_ALL, new FirstKeyOnlyFilter(),
            new KeyOnlyFilter()));
        scanner = table.getScanner(scan);
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    Result next() {
      try {
        return scanner.next();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    @Override
    public void close() {
      scanner.close();
      try {
        table.close();
      } catch (java.io.IOException e) {
        // a light handle over the shared connection
      }
    }
  }

  static double seconds(long startedNanos) {
    return Math.round((System.nanoTime() - startedNanos) / 1e6) / 1e3;
  }
}
