import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.util.ShutdownHookManager;
import org.apache.hadoop.util.ToolRunner;

/**
 * Runs several daemons of one realhbase cluster in one JVM, to save the start time and memory of JVMs that the
 * test bed does not need apart (a region server always gets its own JVM: replication metrics are per JVM).
 *
 *   master    a NameNode, a DataNode and the HMaster (configuration from the class path's *-site.xml). SIGTERM
 *             shuts the HBase cluster down (the region servers flush and exit), then HDFS. On the first start
 *             (the NameNode formatted now) `-Drealhbase.quota=PATH:NAMESPACE:SPACE_BYTES` sets that quota.
 *   namenode  the NameNode alone (a topology with HDFS apart from the masters); the quota as above, once a
 *             DataNode has registered.
 *   datanode DIR   one DataNode storing its blocks in DIR.
 *   hmaster [-Dkey=value...]   the HMaster alone (an active or a backup master: the first to register in ZooKeeper is active);
 *             SIGTERM to the active one shuts the HBase cluster down as above.
 *   thrift    the Thrift1 and Thrift2 gateways: `thrift ARGS... -- ARGS...` (each side as `hbase thrift[2]` takes).
 *
 * Either mode exits the JVM (status 1) as soon as one of its daemons ends on its own, so that the process's
 * death is what the caller watches.
 */
public final class RealHBaseLauncher {
  private RealHBaseLauncher() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      System.err.println("usage: RealHBaseLauncher master | namenode | datanode DIR | hmaster | thrift T1ARGS... -- T2ARGS...");
      System.exit(2);
    }
    switch (args[0]) {
      case "master":
        NameNode nameNode = nameNode();
        dataNode(null);
        awaitHdfs(nameNode);
        hmaster(args);
        break;
      case "namenode":
        NameNode alone = nameNode();
        awaitHdfs(alone);
        alone.join();
        System.err.println("realhbase: NameNode ended");
        System.exit(1);
        break;
      case "datanode":
        DataNode dataNode = dataNode(args.length > 1 ? args[1] : null);
        boolean wasUp = false;
        while (!wasUp || dataNode.isDatanodeUp()) {  // its threads are not joinable from here: poll
          wasUp |= dataNode.isDatanodeUp();
          Thread.sleep(1000);
        }
        System.err.println("realhbase: DataNode ended");
        System.exit(1);
        break;
      case "hmaster":
        awaitFileSystem();
        hmaster(args);
        break;
      case "thrift":
        thrift(args);
        break;
      default:
        System.err.println("RealHBaseLauncher: unknown mode " + args[0]);
        System.exit(2);
    }
  }

  private static boolean fresh;

  /** The NameNode (formatted on the first start). */
  private static NameNode nameNode() throws Exception {
    // NameNode, DataNode and HMaster register metrics sources in one JVM, as MiniDFSCluster's do; and a NameNode
    // formatted in this JVM has registered its retry cache's once already.
    DefaultMetricsSystem.setMiniClusterMode(true);
    Configuration hdfsConf = new HdfsConfiguration();
    File nameDir = new File(hdfsConf.get("dfs.namenode.name.dir").replaceFirst("^file:(//)?", ""));
    fresh = !new File(nameDir, "current/VERSION").exists();
    if (fresh) {
      NameNode.format(hdfsConf);
    }
    return NameNode.createNameNode(new String[0], hdfsConf);
  }

  /** A DataNode (its blocks in `dataDir` when given, else dfs.datanode.data.dir). */
  private static DataNode dataNode(String dataDir) throws Exception {
    Configuration conf = new HdfsConfiguration();
    if (dataDir != null) {
      conf.set("dfs.datanode.data.dir", "file://" + dataDir);
    }
    return DataNode.createDataNode(new String[0], conf);
  }

  /** Waits until a DataNode has registered and safe mode is off; on the first start sets the quota. */
  private static void awaitHdfs(NameNode nameNode) throws Exception {
    Configuration hdfsConf = new HdfsConfiguration();
    while (nameNode.getNamesystem().getNumLiveDataNodes() < 1 || nameNode.isInSafeMode()) {
      Thread.sleep(100);
    }
    String quota = System.getProperty("realhbase.quota");
    if (fresh && quota != null) {
      String[] q = quota.split(":");
      DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(hdfsConf);
      fs.mkdirs(new Path(q[0]));
      fs.setQuota(new Path(q[0]), Long.parseLong(q[1]), Long.parseLong(q[2]));
    }
    System.out.println("realhbase: HDFS is up");
  }

  /**
   * Waits until HDFS answers and has left safe mode: an HMaster started before its NameNode listens aborts at once
   * ("Failed to become active master": connection refused) instead of retrying.
   */
  private static void awaitFileSystem() throws Exception {
    Configuration conf = new HdfsConfiguration();
    while (true) {
      try (FileSystem fs = FileSystem.newInstance(conf)) {
        if (!((DistributedFileSystem) fs).isInSafeMode()) {
          return;
        }
      } catch (java.io.IOException e) {
        // not listening yet
      }
      Thread.sleep(500);
    }
  }

  /** The HMaster; `-Dkey=value` arguments (its ports) override the site files. */
  private static void hmaster(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    for (String arg : args) {
      if (arg.startsWith("-D") && arg.contains("=")) {
        conf.set(arg.substring(2, arg.indexOf('=')), arg.substring(arg.indexOf('=') + 1));
      }
    }
    HMaster master = HMaster.constructMaster(HMaster.class, conf);
    // Above FileSystem's own hook (priority 10): HBase stops before its file system is closed.
    ShutdownHookManager.get().addShutdownHook(() -> {
      try {
        if (!master.isStopped() && master.isActiveMaster()) {
          master.shutdown();  // the cluster: region servers close their regions and exit
        } else if (!master.isStopped()) {
          master.stop("realhbase: SIGTERM to a backup master");  // this master alone
        }
        master.join();
      } catch (Exception e) {
        e.printStackTrace();
      }  // then the NameNode's and DataNode's own hooks (lower priorities) stop HDFS
    }, 100, 120, java.util.concurrent.TimeUnit.SECONDS);
    master.start();
    master.join();
    System.err.println("realhbase: HMaster ended" + (master.isAborted() ? " (aborted)" : ""));
    System.exit(1);
  }

  private static void thrift(String[] args) throws Exception {
    List<String> one = new ArrayList<>();
    List<String> two = new ArrayList<>();
    List<String> side = one;
    for (int i = 1; i < args.length; i++) {
      if (args[i].equals("--")) {
        side = two;
      } else {
        side.add(args[i]);
      }
    }
    Configuration conf = HBaseConfiguration.create();
    Thread t1 = gateway("thrift1", new org.apache.hadoop.hbase.thrift.ThriftServer(new Configuration(conf)), one);
    Thread t2 = gateway("thrift2", new org.apache.hadoop.hbase.thrift2.ThriftServer(new Configuration(conf)), two);
    t1.join();
    t2.join();
  }

  private static Thread gateway(String name, org.apache.hadoop.util.Tool tool, List<String> args) {
    Thread t = new Thread(() -> {
      int rc;
      try {
        rc = ToolRunner.run(tool.getConf(), tool, args.toArray(new String[0]));
      } catch (Throwable e) {
        e.printStackTrace();
        rc = 1;
      }
      System.err.println("realhbase: " + name + " gateway ended with " + rc);
      System.exit(1);
    }, name + "-main");
    t.start();
    return t;
  }
}
