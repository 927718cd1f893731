package local.hbasemigration.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayDeque;
import java.util.Deque;
import org.junit.jupiter.api.Test;

/** The task's pace with a fake clock: the same arithmetic as the Python tasks' (tests/unit/test_throttle*.py). */
class PacingTest {
  static final class Clock {
    double now = 100.0;
  }

  @Test
  void theBucketLetsABurstThroughAndPaysForItAfterwards() {
    Clock clock = new Clock();
    Pacing.TokenBucket bucket = new Pacing.TokenBucket(10, () -> clock.now, s -> clock.now += s);
    assertEquals(0.0, bucket.acquire(10), 1e-9);
    assertEquals(1.0, bucket.acquire(10), 1e-9); // ten more at 10/s: one second
    clock.now += 0.5;
    assertEquals(0.0, bucket.acquire(5), 1e-9);
  }

  @Test
  void theGatePacesAtTheFactorOfTheTasksOwnRateAndWaitsOutAPause() {
    Clock clock = new Clock();
    Deque<Pacing.State> decisions = new ArrayDeque<>();
    decisions.add(new Pacing.State(1.0, "full", ""));
    Pacing.LoadGate gate = new Pacing.LoadGate("http://driver/load", 1.0, 0.5,
        url -> decisions.size() > 1 ? decisions.poll() : decisions.peek(), () -> clock.now, s -> clock.now += s);
    gate.check();
    clock.now += 1.0; // 100 rows in 1 s at full speed: the reference is 100 rows/s
    assertEquals(0.0, gate.afterBatch(100), 1e-9);
    decisions.clear();
    decisions.add(new Pacing.State(0.5, "slow", "load"));
    clock.now += 1.0; // the next 100 rows took 1 s; at half speed they are owed 2 s: 1 s of rest
    assertEquals(1.0, gate.afterBatch(100), 1e-9);
    decisions.clear();
    decisions.add(new Pacing.State(0.0, "paused", "critical"));
    decisions.add(new Pacing.State(0.0, "paused", "critical"));
    decisions.add(new Pacing.State(1.0, "full", ""));
    clock.now += 2.0; // a refresh is due: paused twice (0.5 s each), then full speed
    assertEquals(1.0, gate.afterBatch(100), 1e-9);
    decisions.clear();
    decisions.add(new Pacing.State(0.0, "aborted", "critical for 600 s"));
    clock.now += 2.0;
    assertThrows(Pacing.LoadAbort.class, () -> gate.afterBatch(100));
  }

  @Test
  void anUnreadableDriverLeavesFullSpeed() {
    Clock clock = new Clock();
    Pacing.LoadGate gate = new Pacing.LoadGate("http://driver/load", 1.0, 0.5, url -> {
      throw new IllegalStateException("connection refused");
    }, () -> clock.now, s -> clock.now += s);
    gate.check();
    clock.now += 1.0;
    assertEquals(0.0, gate.afterBatch(100), 1e-9);
  }
}
