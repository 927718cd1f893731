package local.hbasemigration.jvm;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Table;

/**
 * The cells of one key range of one table, with HBase's own client: every result of {@code [startRow, stopRow)}
 * in the order the region servers give them (row, family, qualifier, newest first; in a raw read the delete
 * markers too, each before the puts of its timestamp), a wide row as consecutive results of at most {@code
 * batchCells} cells each. A thread of its own reads {@code depth} scanner calls ahead, so the next call's round
 * trip overlaps the work on this one; memory stays at about {@code aheadCells} cells (plus the client's own call
 * of at most {@code maxResultBytes}) whatever the range or the rows' width.
 *
 * <p>The copy, the verification and the hash verification beside each cluster (issue 41) all read through it.
 * HBase's client re-opens a scanner whose region moved or whose server died where it stopped, so a range is read
 * once even across a region server's death.
 */
public final class RangeReader implements Closeable {
  private static final Object END = new Object();

  private final Table table;
  private final ResultScanner scanner;
  private final BlockingQueue<Object> ahead = new LinkedBlockingQueue<>();
  private final Semaphore room; // cells the read-ahead may still hold
  private final int capacity;
  private final Thread thread;
  private volatile boolean closed;
  private boolean done;
  public long results;
  public long cells;

  public RangeReader(Connection connection, ReadSpec spec, byte[] startRow, byte[] stopRow, int aheadCells) {
    try {
      this.table = connection.getTable(TableName.valueOf(spec.table));
      this.scanner = table.getScanner(spec.scan(startRow, stopRow));
    } catch (IOException e) {
      throw new UncheckedIOException("scan of " + spec.table + " cannot start: " + e.getMessage(), e);
    }
    this.capacity = Math.max(aheadCells, Math.max(1, spec.batchCells));
    this.room = new Semaphore(capacity);
    this.thread = new Thread(this::produce, "range-reader-" + spec.table);
    this.thread.setDaemon(true);
    this.thread.start();
  }

  public RangeReader(Connection connection, ReadSpec spec, byte[] startRow, byte[] stopRow) {
    this(connection, spec, startRow, stopRow, 20_000);
  }

  private void produce() {
    try {
      for (Result r = scanner.next(); r != null && !closed; r = scanner.next()) {
        int n = permits(r);
        while (!closed && !room.tryAcquire(n, 200, TimeUnit.MILLISECONDS)) {
          // the consumer is busy: wait for room, or for close()
        }
        ahead.add(r);
      }
      ahead.add(END);
    } catch (Throwable t) {
      ahead.add(t);
    }
  }

  private int permits(Result r) {
    return Math.max(1, Math.min(r.size(), capacity)); // a result bigger than the budget takes all of it
  }

  /** The next result (a row, or a slice of a wide one), or null at the end of the range. */
  public Result next() {
    if (done) {
      return null;
    }
    Object item;
    try {
      item = ahead.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while scanning", e);
    }
    if (item == END) {
      done = true;
      return null;
    }
    if (item instanceof Throwable) {
      done = true;
      Throwable t = (Throwable) item;
      throw t instanceof RuntimeException ? (RuntimeException) t
          : new IllegalStateException("scan failed: " + t, t);
    }
    Result r = (Result) item;
    room.release(permits(r));
    results++;
    cells += r.size();
    return r;
  }

  @Override
  public void close() {
    closed = true;
    ahead.clear();
    try {
      thread.join(30_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    scanner.close();
    try {
      table.close();
    } catch (IOException e) {
      // a Table is a light handle over the shared connection: nothing to release
    }
  }
}
