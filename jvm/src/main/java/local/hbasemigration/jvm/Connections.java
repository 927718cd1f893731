package local.hbasemigration.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.security.User;
import org.apache.hadoop.security.UserGroupInformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HBase connections of this JVM, one per cluster, shared by every task the executor runs (a Connection is
 * thread-safe and costly to open: its ZooKeeper registry, meta cache and RPC client). Closed when the JVM exits.
 *
 * <p>Kerberos: when the properties carry {@code hbase.client.keytab.principal} and {@code
 * hbase.client.keytab.file}, the connection's user is logged in from that keytab here, in this JVM (the
 * executors' own login: no ticket or token travels with the job); HBase's RPC client re-logs in from the keytab
 * when its ticket ages.
 */
final class Connections {
  private static final Logger LOG = LoggerFactory.getLogger(Connections.class);
  private static final ConcurrentHashMap<String, Connection> OPEN = new ConcurrentHashMap<>();

  static {
    // As bin/hbase on JDK 11+: HBase's shaded netty may use its direct-buffer fast paths (Spark's launcher opens
    // java.nio to unnamed modules already).
    if (System.getProperty("org.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible") == null) {
      System.setProperty("org.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible", "true");
    }
    Runtime.getRuntime().addShutdownHook(new Thread(Connections::closeAll, "hbase-migration-connections"));
  }

  private Connections() {}

  static Connection get(ClusterSpec cluster) {
    return OPEN.computeIfAbsent(cluster.key(), k -> open(cluster));
  }

  /** A connection of its own (the caller closes it): the driver's short checks. */
  static Connection open(ClusterSpec cluster) {
    Configuration conf = cluster.configuration();
    try {
      String principal = conf.get("hbase.client.keytab.principal");
      String keytab = conf.get("hbase.client.keytab.file");
      if (principal != null && keytab != null) {
        UserGroupInformation.setConfiguration(conf);
        UserGroupInformation ugi = UserGroupInformation.loginUserFromKeytabAndReturnUGI(principal, keytab);
        LOG.info("cluster {}: logged in as {} from keytab {}", cluster.name, principal, keytab);
        return ConnectionFactory.createConnection(conf, User.create(ugi));
      }
      return ConnectionFactory.createConnection(conf);
    } catch (IOException e) {
      throw new UncheckedIOException("cluster " + cluster.name + ": cannot connect: " + e.getMessage(), e);
    }
  }

  /** Forget (and close) the shared connection of a cluster: after it failed in a way a new one may not. */
  static void discard(ClusterSpec cluster) {
    Connection c = OPEN.remove(cluster.key());
    if (c != null) {
      try {
        c.close();
      } catch (IOException e) {
        LOG.warn("closing the connection to {} failed: {}", cluster.name, e.toString());
      }
    }
  }

  static void closeAll() {
    for (String key : OPEN.keySet()) {
      Connection c = OPEN.remove(key);
      if (c != null) {
        try {
          c.close();
        } catch (IOException | RuntimeException e) {
          // the JVM is exiting: nothing left to do with it
        }
      }
    }
  }
}
