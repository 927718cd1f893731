package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.util.CollectionAccumulator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one Spark task runs: its share of the partitions, one after the other, each a copy, a verification or a
 * sample; each result (JSON) is added to the accumulator the driver polls as tasks end, and returned. A partition
 * that fails becomes a {@code failed} result naming the error, so the others carry on (the Python tasks' rule).
 */
final class Tasks implements FlatMapFunction<Iterator<String>, String> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(Tasks.class);

  private final String kind;
  private final String specJson;
  private final CollectionAccumulator<String> results;

  Tasks(String kind, String specJson, CollectionAccumulator<String> results) {
    this.kind = kind;
    this.specJson = specJson;
    this.results = results;
  }

  /**
   * The tasks' progress lines at INFO whatever the application's root level (the toolkit's jobs set Spark's to
   * WARN): they are what an operator follows a long copy by, in the executors' logs.
   */
  static void logAtInfo() {
    try {
      org.apache.logging.log4j.core.config.Configurator.setLevel("local.hbasemigration.jvm",
          org.apache.logging.log4j.Level.INFO);
    } catch (LinkageError e) {
      // another logging backend than Spark's log4j 2: its own configuration decides
    }
  }

  @Override
  public Iterator<String> call(Iterator<String> groups) throws Exception {
    logAtInfo();
    JsonNode spec = Json.parse(specJson);
    ObjectNode where = whereabouts();
    List<String> out = new ArrayList<>();
    while (groups.hasNext()) {
      for (JsonNode entry : Json.parse(groups.next())) {
        ObjectNode result = runOne(kind, spec, entry.get(1));
        result.put("position", entry.get(0).asInt());
        result.set("where", where);
        String text = Json.write(result);
        results.add(text);
        out.add(text);
      }
    }
    return out.iterator();
  }

  /**
   * Where this task ran, for the job's summary (executors.py {@code whereabouts()}, the Python tasks' own): the
   * host, the YARN container ({@code CONTAINER_ID}, empty elsewhere) and the jar this class came from (on YARN, the
   * container's localized copy).
   */
  static ObjectNode whereabouts() {
    ObjectNode where = Json.object();
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      host = "";
    }
    where.put("host", host);
    String container = System.getenv("CONTAINER_ID");
    where.put("container", container == null ? "" : container);
    String code;
    try {
      code = new java.io.File(Tasks.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
    } catch (java.net.URISyntaxException | RuntimeException e) {
      code = "";
    }
    where.put("code", code);
    return where;
  }

  static ObjectNode runOne(String kind, JsonNode spec, JsonNode item) {
    long started = System.nanoTime();
    try {
      switch (kind) {
        case "copy":
          return new CopyTask(spec).run(item);
        case "verify":
          return new VerifyTask(spec).run(item);
        case "hash":
          return new HashTask(spec).run(item);
        case "sample":
          return Meta.sample(spec, item);
        default:
          throw new IllegalArgumentException("unknown task kind " + kind);
      }
    } catch (Throwable e) {
      String error = e.getClass().getSimpleName() + ": " + e.getMessage();
      LOG.error("{} of partition #{} failed: {}", kind, item.path("index").asInt(), error, e);
      ObjectNode out = Json.object();
      out.put("partition_id", item.path("partition_id").asText(""));
      out.put("index", item.path("index").asInt());
      out.put("table", item.path("table").asText(""));
      out.put("start_row", item.path("start_row").asText(""));
      out.put("stop_row", item.path("stop_row").asText(""));
      out.put("status", "failed");
      out.put("error", error);
      out.put("elapsed_s", VerifyTask.seconds(started));
      return out;
    }
  }
}
