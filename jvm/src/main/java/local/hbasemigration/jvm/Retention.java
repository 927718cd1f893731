package local.hbasemigration.jvm;

import java.io.Serializable;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * What a family keeps of the cells a raw read returns, cell by cell, in the order the read gives them: a delete
 * marker is a {@link #MARKER}; a put is {@link #RETAINED} when the family keeps it (a normal read shows it, or,
 * with KEEP_DELETED_CELLS, a read in a time range before its delete does) and {@link #HIDDEN} when it is masked by
 * a marker of its family, or older than the family's (or the read's) newest {@code VERSIONS} puts, which the
 * cluster holds only until its next flush or compaction.
 *
 * <p>The masking rules are HBase's own ({@code ScanDeleteTracker}, without NEW_VERSION_BEHAVIOR): a DeleteFamily
 * masks its family's puts at or below its timestamp, a DeleteFamilyVersion those at exactly its timestamp, a
 * DeleteColumn its column's puts at or below, a Delete its column's put at exactly its timestamp. What a family
 * keeps is what a major compaction keeps ({@code MajorCompactionScanQueryMatcher}): the newest VERSIONS puts not
 * masked, or with KEEP_DELETED_CELLS the newest VERSIONS puts masked or not. TTL is the servers' own: a raw read
 * does not return expired cells.
 *
 * <p>So a comparison of two clusters over MARKER and RETAINED cells compares what each cluster shows and will keep,
 * and is blind to what only one of them has not compacted away yet (a masked put, a version past VERSIONS).
 */
public final class Retention {
  public static final byte MARKER = 0;
  public static final byte RETAINED = 1;
  public static final byte HIDDEN = 2;

  /** A family's rules: how many versions it keeps and whether it keeps deleted cells. */
  public static final class Rule implements Serializable {
    private static final long serialVersionUID = 1L;
    public final int versions;
    public final boolean keepDeleted;

    public Rule(int versions, boolean keepDeleted) {
      this.versions = versions;
      this.keepDeleted = keepDeleted;
    }
  }

  private final Map<String, Rule> rules = new HashMap<>(); // by family name (Bytes.toStringBinary)
  private final int readVersions; // 0: the family's own VERSIONS

  private byte[] row;
  private byte[] family;
  private Rule rule;
  private boolean hasFamilyStamp;
  private long familyStamp;
  private final Set<Long> familyVersionStamps = new HashSet<>();
  private byte[] qualifier;
  private boolean hasColumnStamp;
  private long columnStamp;
  private final Set<Long> versionStamps = new HashSet<>();
  private int kept;

  /** {@code rules}: family name -> its rule; {@code readVersions}: the newest N only (0: what each keeps). */
  public Retention(Map<String, Rule> rules, int readVersions) {
    this.rules.putAll(rules);
    this.readVersions = readVersions;
  }

  public byte classify(Cell cell) {
    if (row == null || !CellUtil.matchingRows(cell, row) || !CellUtil.matchingFamily(cell, family)) {
      row = CellUtil.cloneRow(cell);
      family = CellUtil.cloneFamily(cell);
      rule = rules.get(Bytes.toStringBinary(family));
      if (rule == null) {
        throw new IllegalStateException("family " + Bytes.toStringBinary(family) + " has no rule");
      }
      hasFamilyStamp = false;
      familyVersionStamps.clear();
      qualifier = null;
    }
    if (qualifier == null || !CellUtil.matchingQualifier(cell, qualifier)) {
      qualifier = CellUtil.cloneQualifier(cell);
      hasColumnStamp = false;
      versionStamps.clear();
      kept = 0;
    }
    long ts = cell.getTimestamp();
    if (CellUtil.isDelete(cell) && redundant(cell, ts)) {
      return HIDDEN;
    }
    switch (cell.getType()) {
      case DeleteFamily:
        if (!hasFamilyStamp || ts > familyStamp) {
          hasFamilyStamp = true;
          familyStamp = ts;
        }
        return MARKER;
      case DeleteFamilyVersion:
        familyVersionStamps.add(ts);
        return MARKER;
      case DeleteColumn:
        if (!hasColumnStamp || ts > columnStamp) {
          hasColumnStamp = true;
          columnStamp = ts;
        }
        return MARKER;
      case Delete:
        versionStamps.add(ts);
        return MARKER;
      default:
        break;
    }
    boolean masked = (hasFamilyStamp && ts <= familyStamp) || familyVersionStamps.contains(ts)
        || (hasColumnStamp && ts <= columnStamp) || versionStamps.contains(ts);
    if (masked && !rule.keepDeleted) {
      return HIDDEN;
    }
    kept++;
    int limit = readVersions > 0 ? Math.min(readVersions, rule.versions) : rule.versions;
    return kept <= limit ? RETAINED : HIDDEN;
  }

  /**
   * A marker that masks nothing a newer marker of its row, family (or column) does not already mask: one at or below
   * a DeleteFamily's timestamp, or a Delete at or below its column's DeleteColumn. It changes nothing a read shows,
   * and HBase drops it at a cluster's own flush (seen on 2.6.4: a Delete under a DeleteFamily in the same memstore
   * was gone from the source once flushed, still on the target whose memstore had not flushed), so like a masked put
   * it is HIDDEN, not compared. With KEEP_DELETED_CELLS a marker bounds what a time-range read shows: always kept.
   */
  private boolean redundant(Cell cell, long ts) {
    if (rule.keepDeleted) {
      return false;
    }
    if (hasFamilyStamp && ts <= familyStamp) {
      return true;
    }
    return cell.getType() == Cell.Type.Delete && hasColumnStamp && ts <= columnStamp;
  }
}
