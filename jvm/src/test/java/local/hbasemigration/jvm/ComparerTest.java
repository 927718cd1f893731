package local.hbasemigration.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

/** Rows and cells as the native verification classifies them. */
class ComparerTest {
  static final Map<String, Retention.Rule> RULES = Map.of("d", new Retention.Rule(2, false));

  static List<Item> side(KeyValue... cells) {
    Retention r = new Retention(RULES, 0);
    List<Item> out = new ArrayList<>();
    for (KeyValue c : cells) {
      out.add(new Item(c, Bytes.toBytes("d"), r.classify(c), 0));
    }
    return out;
  }

  static List<String> compare(List<Item> source, List<Item> target, Comparer comparer) {
    List<String> out = new ArrayList<>();
    comparer.compare(source.iterator(), target.iterator(), (row, status, diffs, wide) -> {
      StringBuilder b = new StringBuilder(Bytes.toString(row)).append(' ').append(status);
      for (Comparer.Diff d : diffs) {
        b.append(' ').append(Bytes.toString(d.column)).append('@').append(d.timestamp).append('=').append(d.kind);
        if (d.type != null) {
          b.append('/').append(d.type);
        }
      }
      out.add(b.toString());
    });
    return out;
  }

  static KeyValue put(String row, String q, long ts, String v) {
    return RetentionTest.kv(row, "d", q, ts, KeyValue.Type.Put, v);
  }

  static KeyValue marker(String row, String q, long ts, KeyValue.Type type) {
    return RetentionTest.kv(row, "d", q, ts, type, "");
  }

  @Test
  void rowsAreClassifiedAsVerifyReplicationDoes() {
    Comparer c = new Comparer(10);
    List<String> rows = compare(
        side(put("a", "q", 1, "x"), put("b", "q", 1, "x"), put("c", "q", 1, "x")),
        side(put("a", "q", 1, "x"), put("b", "q", 1, "y"), put("d", "q", 1, "x")), c);
    assertEquals(List.of("a matching", "b content_different d:q@1=value_differs", "c only_in_source d:q@1="
        + "missing_on_target", "d only_in_target d:q@1=only_on_target"), rows);
    assertEquals(3, c.sourceCells);
    assertEquals(3, c.targetCells);
  }

  @Test
  void aMarkerOnOneSideOnlyIsNamedWithItsType() {
    List<String> rows = compare(side(marker("a", "q", 5, KeyValue.Type.DeleteColumn), put("a", "q", 4, "x")),
        side(put("a", "q", 4, "x")), new Comparer(10));
    // the source masks the put its marker hides; the target shows it
    assertEquals(List.of("a content_different d:q@5=marker_missing_on_target/DeleteColumn d:q@4=only_on_target"),
        rows);
  }

  @Test
  void theSameMarkerOnBothSidesMasksThePutOnBoth() {
    List<String> rows = compare(side(marker("a", "", 5, KeyValue.Type.DeleteFamily), put("a", "q", 4, "x")),
        side(marker("a", "", 5, KeyValue.Type.DeleteFamily), put("a", "q", 4, "x")), new Comparer(10));
    assertEquals(List.of("a matching"), rows);
  }

  @Test
  void cellsOnlyOneSideHoldsHiddenAreNoDifference() {
    // the source still holds a third version past VERSIONS 2 (not compacted yet); the target dropped it
    Comparer c = new Comparer(10);
    List<String> rows = compare(side(put("a", "q", 3, "x"), put("a", "q", 2, "x"), put("a", "q", 1, "x")),
        side(put("a", "q", 3, "x"), put("a", "q", 2, "x")), c);
    assertEquals(List.of("a matching"), rows);
    assertEquals(1, c.hiddenSource);
    // a row of nothing but cells both sides are about to drop is no row at all
    assertEquals(List.of(), compare(side(), side(), new Comparer(10)));
  }

  @Test
  void aVersionShownOnOneSideAndHeldHiddenOnTheOtherDiffers() {
    // the target deleted version 3, which uncovers its held version 1; the source had compacted 1 away
    List<String> rows = compare(side(marker("a", "q", 3, KeyValue.Type.Delete), put("a", "q", 3, "x"),
        put("a", "q", 2, "x")), side(marker("a", "q", 3, KeyValue.Type.Delete), put("a", "q", 3, "x"),
        put("a", "q", 2, "x"), put("a", "q", 1, "x")), new Comparer(10));
    assertEquals(List.of("a content_different d:q@1=only_on_target"), rows);
  }

  @Test
  void differingCellsNamedPerRowAreCapped() {
    List<String> rows = compare(side(put("a", "q", 2, "x"), put("a", "r", 2, "x"), put("a", "s", 2, "x")), side(),
        new Comparer(2));
    assertEquals(List.of("a only_in_source d:q@2=missing_on_target d:r@2=missing_on_target"), rows);
  }
}
