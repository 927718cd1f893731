package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.DoubleConsumer;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A copy task's pace, as the Python tasks keep it (hbase_migration/data/progress.py {@code TokenBucket}, and
 * hbase_migration/data/throttle.py {@code LoadGate}, whose arithmetic this follows line for line): the per-task
 * caps on rows and bytes per second, and the driver's load decision read over HTTP from its {@code LoadGovernor}
 * between scan batches. The clock and the sleep are injected, so the arithmetic is unit-tested without waiting.
 */
final class Pacing {
  private Pacing() {}

  /** A token bucket refilled at {@code rate} per second, holding at most one second's worth; a request larger than
   * that is allowed and paid for by waiting afterwards. */
  static final class TokenBucket {
    private final double rate;
    private final double burst;
    private final DoubleSupplier clock;
    private final DoubleConsumer sleep;
    private double tokens;
    private double last;

    TokenBucket(double rate, DoubleSupplier clock, DoubleConsumer sleep) {
      this.rate = rate;
      this.burst = rate;
      this.clock = clock;
      this.sleep = sleep;
      this.tokens = burst;
      this.last = clock.getAsDouble();
    }

    /** Take {@code n} tokens; the seconds slept. */
    double acquire(double n) {
      double now = clock.getAsDouble();
      tokens = Math.min(burst, tokens + (now - last) * rate);
      last = now;
      tokens -= n;
      double wait = tokens < 0 ? -tokens / rate : 0.0;
      if (wait > 0) {
        sleep.accept(wait);
      }
      return wait;
    }
  }

  /** The driver's decision: {@code factor} of the task's natural rate, or paused, or aborted. */
  static final class State {
    final double factor;
    final String state;
    final String reason;

    State(double factor, String state, String reason) {
      this.factor = factor;
      this.state = state;
      this.reason = reason;
    }

    boolean paused() {
      return "paused".equals(state);
    }

    boolean aborted() {
      return "aborted".equals(state);
    }

    static State fromJson(JsonNode node) {
      return new State(node.get("factor").asDouble(), node.get("state").asText(), node.path("reason").asText(""));
    }
  }

  /** The copy gave up (the source stayed overloaded): the partition fails, the driver says what stays recorded. */
  static final class LoadAbort extends RuntimeException {
    private static final long serialVersionUID = 1L;

    LoadAbort(State state) {
      super("source overloaded: " + state.reason + ". The copy gave up; its finished partitions are recorded and a "
          + "re-run resumes with the others");
    }
  }

  /** The driver's decision at {@code url}, over HTTP (the driver's own endpoint, not a cluster). */
  static Function<String, State> httpFetch() {
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    return url -> {
      try {
        HttpResponse<String> response = client.send(
            HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).GET().build(),
            HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
          throw new IllegalStateException("HTTP " + response.statusCode());
        }
        return State.fromJson(Json.parse(response.body()));
      } catch (java.io.IOException e) {
        throw new IllegalStateException(e.toString(), e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
    };
  }

  /** LoadGate: at full speed it measures the task's own rate (the reference); at factor f below 1 it paces the
   * task at f x reference on a timeline, resting in steps of {@code refreshS} and re-reading the decision; paused,
   * it waits; aborted, it throws. An unreadable driver leaves the last decision standing (none yet: full speed). */
  static final class LoadGate {
    private static final Logger LOG = LoggerFactory.getLogger(LoadGate.class);
    private final String url;
    private final double refreshS;
    private final double pollS;
    private final Function<String, State> fetch;
    private final DoubleSupplier clock;
    private final DoubleConsumer sleep;
    private State state;
    private Double fetchedAt;
    private boolean warned;
    private double last;
    private long fullRows;
    private double fullS;
    private Double until;
    double restedS;

    LoadGate(String url, double refreshS, double pollS, Function<String, State> fetch, DoubleSupplier clock,
        DoubleConsumer sleep) {
      this.url = url;
      this.refreshS = refreshS;
      this.pollS = pollS;
      this.fetch = fetch;
      this.clock = clock;
      this.sleep = sleep;
      this.last = clock.getAsDouble();
    }

    State decision(boolean force) {
      double now = clock.getAsDouble();
      if (force || fetchedAt == null || now - fetchedAt >= refreshS) {
        fetchedAt = now;
        try {
          state = fetch.apply(url);
        } catch (RuntimeException e) {
          if (!warned) {
            LOG.warn("load throttle: decision at {} unreadable ({}); keeping the last one ({})", url, e.toString(),
                state == null ? "none yet: full speed" : state.state);
            warned = true;
          }
        }
      }
      return state != null ? state : new State(1.0, "full", "no decision read yet");
    }

    /** Before a partition starts: throws if the copy has given up. */
    void check() {
      State s = decision(true);
      if (s.aborted()) {
        throw new LoadAbort(s);
      }
      last = clock.getAsDouble();
    }

    private void rest(double seconds) {
      sleep.accept(seconds);
      restedS += seconds;
    }

    private State usable(State s) {
      while (s.paused()) {
        rest(pollS);
        until = null;
        s = decision(true);
      }
      if (s.aborted()) {
        throw new LoadAbort(s);
      }
      return s;
    }

    /** After a batch of {@code rows} rows: rest as the decision says; the seconds rested. */
    double afterBatch(long rows) {
      double restedBefore = restedS;
      double now = clock.getAsDouble();
      double work = Math.max(0.0, now - last);
      State s = usable(decision(false));
      if (s.factor >= 1.0) {
        fullRows += rows;
        fullS += work;
        until = null;
      } else {
        Double reference = fullRows > 0 && fullS > 0 ? fullRows / fullS
            : work > 0 && rows > 0 ? rows / work : null;
        if (reference != null && rows > 0) {
          double start = until == null ? now - work : Math.max(until, now - work);
          until = start + rows / (reference * s.factor);
          double factor = s.factor;
          double left;
          while (until != null && (left = until - clock.getAsDouble()) > 0) {
            rest(Math.min(left, refreshS));
            State fresh = decision(false);
            if (fresh.paused() || fresh.aborted()) {
              usable(fresh);
              break;
            }
            if (fresh.factor >= 1.0) {
              until = null;
            } else if (fresh.factor != factor) {
              double t = clock.getAsDouble();
              until = t + Math.max(0.0, until - t) * factor / fresh.factor;
              factor = fresh.factor;
            }
          }
        }
      }
      last = clock.getAsDouble();
      return restedS - restedBefore;
    }
  }
}
