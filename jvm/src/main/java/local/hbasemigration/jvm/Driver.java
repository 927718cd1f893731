package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.util.CollectionAccumulator;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The Python driver's entry point into this JVM (hbase_migration/data/datapath/native.py builds one through
 * py4j): the clusters' metadata it plans with, and the Spark jobs it starts, watches and cancels. Python keeps the
 * plan, the resume, the ledger, the progress and the load throttle; the cells stay in the executors' JVMs.
 * Arguments and answers are JSON text.
 */
public final class Driver {
  public Driver() {}

  /** The HBase client's version on this class path (what the jars were built for). */
  public String clientVersion() {
    return org.apache.hadoop.hbase.util.VersionInfo.getVersion();
  }

  public String families(String clusterJson, String table) throws Exception {
    return ours(() -> Json.write(Meta.families(connection(clusterJson), table)));
  }

  public String regions(String clusterJson, String table) throws Exception {
    return ours(() -> Json.write(Meta.regions(connection(clusterJson), table)));
  }

  public String clusterId(String clusterJson) throws Exception {
    return ours(() -> Meta.clusterId(connection(clusterJson)));
  }

  /**
   * Run {@code call} with this class's loader as the thread's context class loader: the driver loads these jars
   * through a loader of its own (py4j's threads see Spark's class path only), and HBase's client finds some of
   * its classes and its hbase-default.xml through the context loader.
   */
  static <T> T ours(java.util.concurrent.Callable<T> call) throws Exception {
    Thread thread = Thread.currentThread();
    ClassLoader previous = thread.getContextClassLoader();
    thread.setContextClassLoader(Driver.class.getClassLoader());
    try {
      return call.call();
    } finally {
      thread.setContextClassLoader(previous);
    }
  }

  /**
   * Whether HBase's client reaches the cluster's region servers from here: the region server holding hbase:meta
   * answers a one-row read of it, with a connection of its own (the properties given bound its timeouts and
   * retries). "" when it does, else why not, in one line.
   */
  public String probe(String clusterJson) throws Exception {
    return ours(() -> probeOnce(clusterJson));
  }

  private static String probeOnce(String clusterJson) {
    ClusterSpec cluster = ClusterSpec.fromJson(Json.parse(clusterJson));
    try (Connection c = Connections.open(cluster);
        org.apache.hadoop.hbase.client.Table meta = c.getTable(org.apache.hadoop.hbase.TableName.META_TABLE_NAME);
        org.apache.hadoop.hbase.client.ResultScanner s = meta.getScanner(
            new org.apache.hadoop.hbase.client.Scan().setLimit(1).setCaching(1))) {
      s.next();
      return "";
    } catch (Throwable e) {
      String text = e.getClass().getSimpleName() + ": " + e.getMessage();
      return text.replace('\n', ' ');
    }
  }

  private static Connection connection(String clusterJson) {
    return Connections.get(ClusterSpec.fromJson(Json.parse(clusterJson)));
  }

  /**
   * Start {@code kind} ("copy", "verify", "sample") over {@code items} (a JSON array of partitions) in {@code
   * slices} Spark tasks, each running its share one after the other (item i in task i % slices, so neighbouring
   * partitions run apart), each task preferring the hosts of its partitions' region servers. Returns at once.
   */
  public Run start(JavaSparkContext jsc, String kind, String specJson, String itemsJson, int slices, String group)
      throws Exception {
    return ours(() -> startJob(jsc, kind, specJson, itemsJson, slices, group));
  }

  private static Run startJob(JavaSparkContext jsc, String kind, String specJson, String itemsJson, int slices,
      String group) {
    JsonNode items = Json.parse(itemsJson);
    int n = Math.max(1, Math.min(slices <= 0 ? items.size() : slices, items.size()));
    List<Tuple2<String, scala.collection.immutable.Seq<String>>> groups = new ArrayList<>();
    for (int s = 0; s < n; s++) {
      ArrayNode share = Json.array();
      Set<String> hosts = new LinkedHashSet<>();
      for (int position = s; position < items.size(); position += n) {
        share.addArray().add(position).add(items.get(position));
        String host = items.get(position).path("host").asText("");
        if (!host.isEmpty()) {
          hosts.add(host);
        }
      }
      groups.add(new Tuple2<>(Json.write(share),
          CollectionConverters.asScala(new ArrayList<>(hosts)).toSeq()));
    }
    ClassTag<String> tag = ClassTag$.MODULE$.apply(String.class);
    RDD<String> rdd = jsc.sc().makeRDD(CollectionConverters.asScala(groups).toSeq(), tag);
    CollectionAccumulator<String> results = jsc.sc().collectionAccumulator("hbase-migration " + kind + " results");
    JavaRDD<String> tasks = JavaRDD.fromRDD(rdd, tag).mapPartitions(new Tasks(kind, specJson, results));
    return new Run(jsc, tasks, results, group, kind + ": " + items.size() + " partitions in " + n + " tasks");
  }

  /** A native job running in a thread of its own: the driver polls what finished, waits, or cancels it. */
  public static final class Run {
    private final JavaSparkContext jsc;
    private final CollectionAccumulator<String> results;
    private final String group;
    private final Thread thread;
    private volatile Throwable failure;
    private volatile List<String> collected;
    private int seen;

    Run(JavaSparkContext jsc, JavaRDD<String> tasks, CollectionAccumulator<String> results, String group,
        String description) {
      this.jsc = jsc;
      this.results = results;
      this.group = group;
      ClassLoader loader = Driver.class.getClassLoader();
      this.thread = new Thread(() -> {
        Thread.currentThread().setContextClassLoader(loader);
        try {
          jsc.setJobGroup(group, description, true);
          collected = tasks.collect();
        } catch (Throwable t) {
          failure = t;
        }
      }, "hbase-migration-native-job");
      this.thread.setDaemon(true);
      this.thread.start();
    }

    /** The results that reached the driver since the last poll (a task's results as it ends), a JSON array. */
    public synchronized String poll() {
      List<String> value = results.value();
      ArrayNode out = Json.array();
      for (int i = seen; i < value.size(); i++) {
        out.add(Json.parse(value.get(i)));
      }
      seen = value.size();
      return Json.write(out);
    }

    /** Wait up to {@code millis} for the job to end; whether it has. */
    public boolean waitFor(long millis) throws InterruptedException {
      thread.join(Math.max(1, millis));
      return !thread.isAlive();
    }

    /** Why the job failed (Spark's error, one line), or null. */
    public String failure() {
      Throwable t = failure;
      return t == null ? null : (t.getClass().getSimpleName() + ": " + t.getMessage()).replace('\n', ' ');
    }

    /** Every result, as the job's collect returned them (after it ended), a JSON array. */
    public String results() {
      ArrayNode out = Json.array();
      if (collected != null) {
        for (String r : collected) {
          out.add(Json.parse(r));
        }
      }
      return Json.write(out);
    }

    public void cancel() {
      jsc.sc().cancelJobGroup(group);
    }
  }

  static ObjectNode object() {
    return Json.object();
  }
}
