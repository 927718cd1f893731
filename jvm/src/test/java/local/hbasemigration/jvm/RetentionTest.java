package local.hbasemigration.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

/** What a family keeps of a raw read, against HBase's own delete and version rules. */
class RetentionTest {
  static KeyValue kv(String row, String family, String qualifier, long ts, KeyValue.Type type, String value) {
    return new KeyValue(Bytes.toBytes(row), Bytes.toBytes(family), Bytes.toBytes(qualifier), ts, type,
        Bytes.toBytes(value));
  }

  static KeyValue put(String row, String qualifier, long ts) {
    return kv(row, "d", qualifier, ts, KeyValue.Type.Put, "v" + ts);
  }

  static List<Byte> classify(Retention r, KeyValue... cells) {
    List<Byte> out = new ArrayList<>();
    for (KeyValue c : cells) {
      out.add(r.classify(c));
    }
    return out;
  }

  static final byte M = Retention.MARKER;
  static final byte R = Retention.RETAINED;
  static final byte H = Retention.HIDDEN;

  @Test
  void versionsPastTheFamilysAreHidden() {
    Retention r = new Retention(Map.of("d", new Retention.Rule(2, false)), 0);
    assertEquals(List.of(R, R, H, R), classify(r, put("a", "q", 3), put("a", "q", 2), put("a", "q", 1),
        put("a", "r", 1)));
  }

  @Test
  void aReadOfFewerVersionsKeepsFewer() {
    Retention r = new Retention(Map.of("d", new Retention.Rule(3, false)), 1);
    assertEquals(List.of(R, H, R), classify(r, put("a", "q", 3), put("a", "q", 2), put("b", "q", 1)));
  }

  @Test
  void eachMarkerMasksWhatHBaseMasks() {
    Retention r = new Retention(Map.of("d", new Retention.Rule(5, false)), 0);
    // DeleteFamily at 5 masks every column's puts at or below 5; a put at 6 shows
    assertEquals(List.of(R, M, H, H), classify(r, put("a", "", 6), kv("a", "d", "", 5, KeyValue.Type.DeleteFamily,
        ""), put("a", "", 5), put("a", "q", 4)));
    // DeleteFamilyVersion at 3: every column's put at exactly 3
    r = new Retention(Map.of("d", new Retention.Rule(5, false)), 0);
    assertEquals(List.of(M, R, H, R, H), classify(r, kv("b", "d", "", 3, KeyValue.Type.DeleteFamilyVersion, ""),
        put("b", "q", 4), put("b", "q", 3), put("b", "q", 2), put("b", "r", 3)));
    // DeleteColumn at 3: that column at or below 3, not the next column
    r = new Retention(Map.of("d", new Retention.Rule(5, false)), 0);
    assertEquals(List.of(R, M, H, H, R), classify(r, put("c", "q", 4), kv("c", "d", "q", 3,
        KeyValue.Type.DeleteColumn, ""), put("c", "q", 3), put("c", "q", 1), put("c", "r", 1)));
    // Delete (one version) at 3: exactly that version
    r = new Retention(Map.of("d", new Retention.Rule(5, false)), 0);
    assertEquals(List.of(M, H, R), classify(r, kv("e", "d", "q", 3, KeyValue.Type.Delete, ""), put("e", "q", 3),
        put("e", "q", 2)));
  }

  @Test
  void maskedPutsDoNotCountAsVersionsButKeepDeletedCellsKeepsThem() {
    KeyValue[] cells = {kv("a", "d", "q", 3, KeyValue.Type.Delete, ""), put("a", "q", 3), put("a", "q", 2),
        put("a", "q", 1)};
    assertEquals(List.of(M, H, R, R), classify(new Retention(Map.of("d", new Retention.Rule(2, false)), 0), cells));
    assertEquals(List.of(M, R, R, H), classify(new Retention(Map.of("d", new Retention.Rule(2, true)), 0), cells));
  }

  @Test
  void aNewRowOrFamilyStartsAfresh() {
    Retention r = new Retention(Map.of("d", new Retention.Rule(5, false), "e", new Retention.Rule(5, false)), 0);
    assertEquals(List.of(M, H, R, R), classify(r, kv("a", "d", "", 5, KeyValue.Type.DeleteFamily, ""),
        put("a", "q", 1), kv("a", "e", "q", 1, KeyValue.Type.Put, "x"), put("b", "q", 1)));
  }

  @Test
  void aMarkerUnderANewerFamilyOrColumnMarkerIsHiddenAsHBaseDropsItAtAFlush() {
    Retention r = new Retention(Map.of("d", new Retention.Rule(5, false)), 0);
    // DeleteFamily at 10: a Delete and a DeleteColumn below it mask nothing more (HIDDEN); a Delete above it counts
    assertEquals(List.of(M, M, H, H, R), classify(r, kv("a", "d", "", 10, KeyValue.Type.DeleteFamily, ""),
        kv("a", "d", "q", 12, KeyValue.Type.Delete, ""), kv("a", "d", "q", 5, KeyValue.Type.Delete, ""),
        kv("a", "d", "r", 5, KeyValue.Type.DeleteColumn, ""), put("a", "r", 11)));
    // a Delete at or below its column's DeleteColumn is hidden; the DeleteColumn itself is compared
    r = new Retention(Map.of("d", new Retention.Rule(5, false)), 0);
    assertEquals(List.of(M, H, H), classify(r, kv("b", "d", "q", 8, KeyValue.Type.DeleteColumn, ""),
        kv("b", "d", "q", 7, KeyValue.Type.Delete, ""), put("b", "q", 7)));
    // with KEEP_DELETED_CELLS every marker counts: it bounds what a time-range read shows
    r = new Retention(Map.of("d", new Retention.Rule(5, true)), 0);
    assertEquals(List.of(M, M), classify(r, kv("c", "d", "", 10, KeyValue.Type.DeleteFamily, ""),
        kv("c", "d", "q", 5, KeyValue.Type.Delete, "")));
  }
}
