package local.hbasemigration.jvm;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.PriorityQueue;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * One side of a comparison as a stream of {@link Item}s in the target's order: a raw read of a key range, each
 * cell classified by its family's {@link Retention} and its family renamed to the target's name. When renames
 * change the order of the families in a row, each family is read by a scan of its own and the scans are merged by
 * (row, target family), so a row's cells still come in the target's order and no row is held whole.
 */
final class SideStream implements Iterator<Item>, AutoCloseable {
  private final List<RangeReader> readers = new ArrayList<>();
  private final Iterator<Item> items;
  long results;

  /**
   * {@code renames}: source family -> target family (empty on the target side or without renames); {@code
   * rules}: the side's families (by their own names) and what each keeps.
   */
  SideStream(Connection connection, ReadSpec spec, byte[] start, byte[] stop, Map<String, byte[]> renames,
      Map<String, Retention.Rule> rules, boolean perFamily) {
    if (!perFamily) {
      RangeReader reader = new RangeReader(connection, spec, start, stop);
      readers.add(reader);
      items = new Classified(reader, renames, new Retention(rules, spec.versions));
      return;
    }
    PriorityQueue<Peeking> queue = new PriorityQueue<>((a, b) -> {
      int c = a.head.compareRow(b.head);
      return c != 0 ? c : Bytes.compareTo(a.head.family, b.head.family);
    });
    for (byte[] family : spec.families) {
      RangeReader reader = new RangeReader(connection, spec.withFamilies(Collections.singletonList(family)), start,
          stop);
      readers.add(reader);
      Peeking p = new Peeking(new Classified(reader, renames, new Retention(rules, spec.versions)));
      if (p.head != null) {
        queue.add(p);
      }
    }
    items = new Iterator<Item>() {
      @Override
      public boolean hasNext() {
        return !queue.isEmpty();
      }

      @Override
      public Item next() {
        Peeking p = queue.poll();
        if (p == null) {
          throw new NoSuchElementException();
        }
        Item out = p.head;
        p.advance();
        if (p.head != null) {
          queue.add(p);
        }
        return out;
      }
    };
  }

  @Override
  public boolean hasNext() {
    return items.hasNext();
  }

  @Override
  public Item next() {
    return items.next();
  }

  long results() {
    long n = 0;
    for (RangeReader r : readers) {
      n += r.results;
    }
    return n;
  }

  @Override
  public void close() {
    for (RangeReader r : readers) {
      r.close();
    }
  }

  /** One reader's cells, classified and renamed. */
  private final class Classified implements Iterator<Item> {
    private final RangeReader reader;
    private final Map<String, byte[]> renames;
    private final Retention retention;
    private Cell[] cells = new Cell[0];
    private int at;
    private byte[] lastRow;
    private int piece;

    Classified(RangeReader reader, Map<String, byte[]> renames, Retention retention) {
      this.reader = reader;
      this.renames = renames;
      this.retention = retention;
    }

    @Override
    public boolean hasNext() {
      while (at >= cells.length) {
        Result r = reader.next();
        if (r == null) {
          return false;
        }
        cells = r.rawCells();
        at = 0;
        if (cells == null) {
          cells = new Cell[0];
          continue;
        }
        if (cells.length > 0) {
          byte[] row = r.getRow();
          piece = lastRow != null && Bytes.equals(row, lastRow) ? piece + 1 : 0;
          lastRow = row;
        }
      }
      return true;
    }

    @Override
    public Item next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      Cell cell = cells[at++];
      byte[] family = CellUtil.cloneFamily(cell);
      byte[] renamed = renames.isEmpty() ? null : renames.get(Bytes.toStringBinary(family));
      return new Item(cell, renamed != null ? renamed : family, retention.classify(cell), piece);
    }
  }

  private static final class Peeking {
    private final Iterator<Item> it;
    Item head;

    Peeking(Iterator<Item> it) {
      this.it = it;
      advance();
    }

    void advance() {
      head = it.hasNext() ? it.next() : null;
    }
  }
}
