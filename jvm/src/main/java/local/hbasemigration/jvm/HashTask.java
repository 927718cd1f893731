package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One side's leaf digests of one partition, beside its cluster (issue 41; hbase_migration/data/leafhash.py defines the
 * digest and hashverify.py the verification): a raw read of the partition's range through {@link SideStream}, in the
 * target's terms, every delete marker and every put its family keeps ({@link Retention}: what a comparison of two
 * clusters compares, blind to what only one has not compacted away yet), each cell fed to the digest of the leaf its
 * row falls in. The byte stream is leafhash.py's, byte for byte: per row {@code 0x01, u32 len, row}; per cell {@code
 * u16 len, family:qualifier, i64 timestamp, u8 type (KeyValue.Type's code), u32 len, value}; SHA-256, the first 16
 * bytes kept. The result is the JSON of the Python side's {@code LeafDigests}.
 */
final class HashTask {
  private static final Logger LOG = LoggerFactory.getLogger(HashTask.class);
  static final int DIGEST_BYTES = 16;

  private final ClusterSpec cluster;
  private final ReadSpec read;
  private final Map<String, byte[]> renames = new HashMap<>();
  private final Map<String, Retention.Rule> rules;
  private final boolean perFamily;
  private final String side;

  HashTask(JsonNode spec) {
    this.side = spec.path("hash_side").asText("source");
    boolean source = side.equals("source");
    this.cluster = ClusterSpec.fromJson(spec.get(side));
    this.read = ReadSpec.fromJson(spec, spec.get(source ? "table" : "target_table").asText(), source, true);
    JsonNode pairs = spec.get("families");
    if (source && pairs != null) {
      for (JsonNode pair : pairs) {
        if (!pair.get(0).asText().equals(pair.get(1).asText())) {
          renames.put(Bytes.toStringBinary(Bytes.toBytes(pair.get(0).asText())), Bytes.toBytes(pair.get(1).asText()));
        }
      }
    }
    this.rules = VerifyTask.rules(spec.get(source ? "source_families" : "target_families"));
    this.perFamily = source && spec.path("per_family").asBoolean(false);
  }

  /** The digests of a partition's leaves as a stream of items comes (pure: the unit tests feed it). */
  static final class Leaves {
    private final byte[][] bounds;
    private final ByteBuffer header = ByteBuffer.allocate(17);
    private MessageDigest sha = sha256();
    private int leaf;
    private byte[] lastRow;
    private long rows;
    private long cells;
    private long bytes;
    final List<byte[]> digests = new ArrayList<>();
    final List<Long> rowCounts = new ArrayList<>();
    final List<Long> cellCounts = new ArrayList<>();
    final List<Long> byteCounts = new ArrayList<>();

    Leaves(byte[][] bounds) {
      this.bounds = bounds;
    }

    private static MessageDigest sha256() {
      try {
        return MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("SHA-256 is part of every JVM", e);
      }
    }

    private void closeLeaf() {
      byte[] full = sha.digest();
      digests.add(java.util.Arrays.copyOf(full, DIGEST_BYTES));
      rowCounts.add(rows);
      cellCounts.add(cells);
      byteCounts.add(bytes);
      sha = sha256();
      rows = cells = bytes = 0;
      leaf++;
    }

    /** One cell: its row, its column in the target's terms ({@code family:qualifier}), timestamp, type, value. */
    void add(byte[] row, byte[] column, long ts, byte type, byte[] value, int valueOffset, int valueLength) {
      if (lastRow == null || !Bytes.equals(row, lastRow)) {
        if (lastRow != null && Bytes.compareTo(row, lastRow) < 0) {
          throw new IllegalStateException("rows out of key order: " + Bytes.toStringBinary(row) + " after "
              + Bytes.toStringBinary(lastRow));
        }
        while (leaf < bounds.length && Bytes.compareTo(row, bounds[leaf]) >= 0) {
          closeLeaf();
        }
        lastRow = row;
        rows++;
        header.clear();
        header.put((byte) 1).putInt(row.length);
        sha.update(header.array(), 0, 5);
        sha.update(row);
      }
      header.clear();
      header.putShort((short) column.length);
      sha.update(header.array(), 0, 2);
      sha.update(column);
      header.clear();
      header.putLong(ts).put(type).putInt(valueLength);
      sha.update(header.array(), 0, 13);
      sha.update(value, valueOffset, valueLength);
      cells++;
      bytes += row.length + column.length + valueLength + 9;
    }

    void finish() {
      while (leaf <= bounds.length) {
        closeLeaf();
      }
    }
  }

  ObjectNode run(JsonNode partition) {
    long started = System.nanoTime();
    byte[] start = Json.unhex(partition.get("start_row").asText());
    byte[] stop = Json.unhex(partition.get("stop_row").asText());
    JsonNode boundsJson = partition.get("bounds");
    byte[][] bounds = new byte[boundsJson == null ? 0 : boundsJson.size()][];
    for (int i = 0; i < bounds.length; i++) {
      bounds[i] = Json.unhex(boundsJson.get(i).asText());
    }
    Leaves leaves = new Leaves(bounds);
    Connection connection = Connections.get(cluster);
    long hidden = 0;
    try (SideStream items = new SideStream(connection, read, start, stop, renames, rules, perFamily)) {
      while (items.hasNext()) {
        Item item = items.next();
        if (item.kind == Retention.HIDDEN) {
          hidden++; // held by this cluster until its next compaction only: not part of what it keeps
          continue;
        }
        Cell c = item.cell;
        leaves.add(item.row(), item.column(), c.getTimestamp(), c.getType().getCode(), c.getValueArray(),
            c.getValueOffset(), c.getValueLength());
      }
    }
    leaves.finish();
    ObjectNode out = Json.object();
    out.put("index", partition.get("index").asInt());
    out.put("first_leaf", partition.path("first_leaf").asInt());
    StringBuilder hex = new StringBuilder(leaves.digests.size() * DIGEST_BYTES * 2);
    for (byte[] d : leaves.digests) {
      hex.append(Json.hex(d));
    }
    out.put("digests", hex.toString());
    ArrayNode rows = out.putArray("rows");
    leaves.rowCounts.forEach(rows::add);
    ArrayNode cells = out.putArray("cells");
    leaves.cellCounts.forEach(cells::add);
    ArrayNode bytes = out.putArray("bytes");
    leaves.byteCounts.forEach(bytes::add);
    out.put("hidden_cells", hidden);
    out.put("status", "hashed");
    out.put("elapsed_s", VerifyTask.seconds(started));
    LOG.info("{} side: partition #{} hashed (native, raw): {} leaves, {} cells ({} hidden left out) in {}s", side,
        partition.get("index").asInt(), leaves.digests.size(), leaves.cellCounts.stream().mapToLong(Long::longValue)
            .sum(), hidden, out.get("elapsed_s").asDouble());
    return out;
  }
}
