package local.hbasemigration.jvm;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.util.Bytes;

/** A cell of one side of a comparison, in the target's terms (its family renamed), with what the family keeps of it
 * ({@link Retention}) and which result of its row it came in (0: the first; more: a wide row's next slice). */
final class Item {
  final Cell cell;
  final byte[] family; // the target's name of the cell's family
  final byte kind;
  final int piece;

  Item(Cell cell, byte[] family, byte kind, int piece) {
    this.cell = cell;
    this.family = family;
    this.kind = kind;
    this.piece = piece;
  }

  int compareRow(Item other) {
    return Bytes.compareTo(cell.getRowArray(), cell.getRowOffset(), cell.getRowLength(), other.cell.getRowArray(),
        other.cell.getRowOffset(), other.cell.getRowLength());
  }

  /** HBase's order of cells in a row: family, qualifier, newest first, then the type (markers before puts). */
  int compareTo(Item other) {
    int c = compareRow(other);
    if (c != 0) {
      return c;
    }
    c = Bytes.compareTo(family, other.family);
    if (c != 0) {
      return c;
    }
    c = Bytes.compareTo(cell.getQualifierArray(), cell.getQualifierOffset(), cell.getQualifierLength(),
        other.cell.getQualifierArray(), other.cell.getQualifierOffset(), other.cell.getQualifierLength());
    if (c != 0) {
      return c;
    }
    c = Long.compare(other.cell.getTimestamp(), cell.getTimestamp());
    if (c != 0) {
      return c;
    }
    return Integer.compare(other.cell.getType().getCode() & 0xff, cell.getType().getCode() & 0xff);
  }

  boolean sameValue(Item other) {
    return Bytes.equals(cell.getValueArray(), cell.getValueOffset(), cell.getValueLength(),
        other.cell.getValueArray(), other.cell.getValueOffset(), other.cell.getValueLength());
  }

  byte[] row() {
    return java.util.Arrays.copyOfRange(cell.getRowArray(), cell.getRowOffset(),
        cell.getRowOffset() + cell.getRowLength());
  }

  /** {@code family:qualifier}, as the Python side names a column. */
  byte[] column() {
    byte[] out = new byte[family.length + 1 + cell.getQualifierLength()];
    System.arraycopy(family, 0, out, 0, family.length);
    out[family.length] = ':';
    System.arraycopy(cell.getQualifierArray(), cell.getQualifierOffset(), out, family.length + 1,
        cell.getQualifierLength());
    return out;
  }
}
