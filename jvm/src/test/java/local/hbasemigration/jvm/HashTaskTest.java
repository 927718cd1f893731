package local.hbasemigration.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

/** The leaf digests byte for byte as hbase_migration/data/leafhash.py makes them (the same vectors as its tests). */
class HashTaskTest {
  private static void add(HashTask.Leaves leaves, String row, String column, long ts, int type, String value) {
    byte[] v = Bytes.toBytes(value);
    leaves.add(Bytes.toBytes(row), Bytes.toBytes(column), ts, (byte) type, v, 0, v.length);
  }

  @Test
  void digestsAreLeafhashPys() {
    // leafhash.hash_rows(HashPartition(0, b'', b'', (b'r2',), 0), [(b'r1', [(b'cf:a', 20, b'new'),
    //     (b'cf:a', 10, b'old')]), (b'r2', [(b'd:x', 1, b'v', 12)])])
    HashTask.Leaves leaves = new HashTask.Leaves(new byte[][] {Bytes.toBytes("r2")});
    add(leaves, "r1", "cf:a", 20, 4, "new");
    add(leaves, "r1", "cf:a", 10, 4, "old");
    add(leaves, "r2", "d:x", 1, 12, "v");
    leaves.finish();
    assertEquals("3177b0d01f875dfad908b09cfa5c5e7c", Json.hex(leaves.digests.get(0)));
    assertEquals("22bb2b6eefedc68830dcf54307c6c45a", Json.hex(leaves.digests.get(1)));
    assertEquals(List.of(1L, 1L), leaves.rowCounts);
    assertEquals(List.of(2L, 1L), leaves.cellCounts);
    assertEquals(List.of(36L, 15L), leaves.byteCounts);
  }

  @Test
  void emptyLeavesAreHashedAndRowsMustComeInOrder() {
    HashTask.Leaves leaves = new HashTask.Leaves(new byte[][] {Bytes.toBytes("c"), Bytes.toBytes("e")});
    add(leaves, "d", "f:q", 1, 4, "x");
    leaves.finish();
    assertEquals(3, leaves.digests.size());
    assertEquals(Json.hex(leaves.digests.get(0)), Json.hex(leaves.digests.get(2))); // both empty
    HashTask.Leaves other = new HashTask.Leaves(new byte[0][]);
    add(other, "b", "f:q", 1, 4, "x");
    assertThrows(IllegalStateException.class, () -> add(other, "a", "f:q", 1, 4, "x"));
  }
}
