package local.hbasemigration.jvm;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.security.User;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.spark.SparkFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HBase connections of this JVM, one per cluster, shared by every task the executor runs (a Connection is
 * thread-safe and costly to open: its ZooKeeper registry, meta cache and RPC client). Closed when the JVM exits.
 *
 * <p>Kerberos: when the properties carry {@code hbase.client.keytab.principal} and {@code
 * hbase.client.keytab.file}, the connection's user is logged in from that keytab here, in this JVM (the
 * executors' own login: no ticket or token travels with the job); HBase's RPC client re-logs in from the keytab
 * when its ticket ages. The login reads the krb5.conf the connection names ({@code hbase-migration.krb5.conf},
 * set as the JVM's {@code java.security.krb5.conf}: {@link #useKrb5Conf}); both files are found where Spark
 * ships them when the path is not on this host ({@link #localFile}).
 */
final class Connections {
  private static final Logger LOG = LoggerFactory.getLogger(Connections.class);
  private static final ConcurrentHashMap<String, Connection> OPEN = new ConcurrentHashMap<>();
  /** The connection's krb5.conf (native.py {@code client_properties}), and Java's property for it. */
  static final String KRB5_CONF = "hbase-migration.krb5.conf";
  private static final String JAVA_KRB5_CONF = "java.security.krb5.conf";

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
        keytab = localFile(keytab);
        conf.set("hbase.client.keytab.file", keytab);
        String krb5 = conf.get(KRB5_CONF);
        if (krb5 != null) {
          useKrb5Conf(cluster.name, localFile(krb5));
        }
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

  /**
   * The JVM's krb5.conf ({@code java.security.krb5.conf}) becomes the connection's, also where the JVM was given
   * another (a {@code -D} of extraJavaOptions: a YARN node's own, whose default realm and [domain_realm] are its
   * datacenter's): the toolkit authenticates with the krb5.conf its connections name on every path, the one
   * preflight checked (the Python side checked that both clusters' connections name the same). Set before the
   * keytab login, which re-reads it (Hadoop's keytab login asks Krb5LoginModule for refreshKrb5Config), so it holds
   * even where Kerberos was initialised before. HBase's SASL client asks for {@code hbase@<server host>} in the
   * realm the [domain_realm] gives that host: with a krb5.conf of the other datacenter, its default realm, and
   * "Server not found in Kerberos database" (a YARN container of the target's datacenter reading the source).
   */
  static synchronized void useKrb5Conf(String cluster, String path) {
    String current = System.getProperty(JAVA_KRB5_CONF);
    if (!path.equals(current)) {
      System.setProperty(JAVA_KRB5_CONF, path);
      LOG.info("cluster {}: this JVM's krb5.conf is {} (the connection's{})", cluster, path,
          current == null ? "" : "; it was " + current);
    }
  }

  /**
   * Where a file a connection names (its keytab, its krb5.conf) is in this JVM: the path itself, else the file of
   * that name Spark shipped with the job (--files: a YARN container's working directory, SparkFiles' directory
   * elsewhere), else the path as given (the login then says it is missing).
   */
  static String localFile(String path) {
    if (new File(path).isFile()) {
      return path;
    }
    String base = new File(path).getName();
    File inWorkingDir = new File(base).getAbsoluteFile();
    if (inWorkingDir.isFile()) {
      return inWorkingDir.getPath();
    }
    try {
      File shipped = new File(SparkFiles.getRootDirectory(), base);
      if (shipped.isFile()) {
        return shipped.getPath();
      }
    } catch (RuntimeException | LinkageError e) {
      // no Spark environment in this JVM (a unit test): the path as given
    }
    return path;
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
