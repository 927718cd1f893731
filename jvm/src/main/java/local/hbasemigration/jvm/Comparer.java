package local.hbasemigration.jvm;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The merge-join of two sides' cells by row (VerifyReplication's, cell by cell): each row is {@link #MATCHING},
 * {@link #CONTENT_DIFFERENT}, {@link #ONLY_IN_SOURCE} or {@link #ONLY_IN_TARGET}, and a differing row names its
 * differing cells. Both sides stream: a row wider than a scan result is compared slice by slice, never held.
 *
 * <p>What is compared is what each cluster keeps ({@link Retention}): every delete marker (type and timestamp) and
 * every retained put (timestamp and value). A put one side keeps and the other hides (masked there, or past its
 * VERSIONS) is a difference; a cell both hide, or one side holds hidden and the other not at all, is none (each
 * cluster drops such cells at its own next flush or compaction).
 */
final class Comparer {
  static final String MATCHING = "matching";
  static final String CONTENT_DIFFERENT = "content_different";
  static final String ONLY_IN_SOURCE = "only_in_source";
  static final String ONLY_IN_TARGET = "only_in_target";
  static final String MISSING_ON_TARGET = "missing_on_target";
  static final String ONLY_ON_TARGET = "only_on_target";
  static final String VALUE_DIFFERS = "value_differs";
  static final String MARKER_MISSING_ON_TARGET = "marker_missing_on_target";
  static final String MARKER_ONLY_ON_TARGET = "marker_only_on_target";

  /** One differing cell of a row. {@code type}: the delete marker's type, null for a put. */
  static final class Diff {
    final byte[] column;
    final long timestamp;
    final String kind;
    final String type;

    Diff(byte[] column, long timestamp, String kind, String type) {
      this.column = column;
      this.timestamp = timestamp;
      this.kind = kind;
      this.type = type;
    }
  }

  /** Where rows go: {@code status} for every row either side has; {@code diffs} (at most versionsPerRow) only
   * for a differing one; {@code wide}: the row came in more than one result on a side. */
  interface Sink {
    void row(byte[] row, String status, List<Diff> diffs, boolean wide);
  }

  long sourceCells; // markers and retained puts compared, per side
  long targetCells;
  long hiddenSource; // puts held by one side only, hidden there: not differences
  long hiddenTarget;
  private final int versionsPerRow;

  Comparer(int versionsPerRow) {
    this.versionsPerRow = versionsPerRow;
  }

  void compare(Iterator<Item> source, Iterator<Item> target, Sink sink) {
    Item s = source.hasNext() ? source.next() : null;
    Item t = target.hasNext() ? target.next() : null;
    while (s != null || t != null) {
      Item first = s == null ? t : t == null ? s : s.compareRow(t) <= 0 ? s : t;
      byte[] row = first.row();
      boolean srcAny = false;
      boolean tgtAny = false;
      boolean wide = false;
      List<Diff> diffs = new ArrayList<>();
      boolean differs = false;
      while (true) {
        boolean sIn = s != null && s.compareRow(first) == 0;
        boolean tIn = t != null && t.compareRow(first) == 0;
        if (!sIn && !tIn) {
          break;
        }
        int c = !sIn ? 1 : !tIn ? -1 : s.compareTo(t);
        String kind = null;
        Item shown = c <= 0 ? s : t;
        if (c == 0) {
          wide |= s.piece > 0 || t.piece > 0;
          srcAny |= s.kind != Retention.HIDDEN;
          tgtAny |= t.kind != Retention.HIDDEN;
          countBoth(s, t);
          if (s.kind == Retention.RETAINED && t.kind == Retention.RETAINED) {
            kind = s.sameValue(t) ? null : VALUE_DIFFERS;
          } else if (s.kind == Retention.RETAINED && t.kind == Retention.HIDDEN) {
            kind = MISSING_ON_TARGET;
          } else if (s.kind == Retention.HIDDEN && t.kind == Retention.RETAINED) {
            kind = ONLY_ON_TARGET;
          }
          s = source.hasNext() ? source.next() : null;
          t = target.hasNext() ? target.next() : null;
        } else if (c < 0) {
          wide |= s.piece > 0;
          if (s.kind == Retention.HIDDEN) {
            hiddenSource++;
          } else {
            srcAny = true;
            sourceCells++;
            kind = s.kind == Retention.MARKER ? MARKER_MISSING_ON_TARGET : MISSING_ON_TARGET;
          }
          s = source.hasNext() ? source.next() : null;
        } else {
          wide |= t.piece > 0;
          if (t.kind == Retention.HIDDEN) {
            hiddenTarget++;
          } else {
            tgtAny = true;
            targetCells++;
            kind = t.kind == Retention.MARKER ? MARKER_ONLY_ON_TARGET : ONLY_ON_TARGET;
          }
          t = target.hasNext() ? target.next() : null;
        }
        if (kind != null) {
          differs = true;
          if (diffs.size() < versionsPerRow) {
            String type = shown.kind == Retention.MARKER ? shown.cell.getType().name() : null;
            diffs.add(new Diff(shown.column(), shown.cell.getTimestamp(), kind, type));
          }
        }
      }
      if (!srcAny && !tgtAny) {
        continue; // only cells both clusters are about to drop
      }
      String status = !differs ? MATCHING : !tgtAny ? ONLY_IN_SOURCE : !srcAny ? ONLY_IN_TARGET
          : CONTENT_DIFFERENT;
      sink.row(row, status, differs ? diffs : List.of(), wide);
    }
  }

  private void countBoth(Item s, Item t) {
    if (s.kind != Retention.HIDDEN) {
      sourceCells++;
    }
    if (t.kind != Retention.HIDDEN) {
      targetCells++;
    }
  }
}
