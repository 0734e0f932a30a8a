package dev.basalt.ycsb;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.util.Bytes;
import site.ycsb.Utils;

/**
 * The chores around a benchmark run, for scripts/bench-hbase, through HBase's own client:
 *
 * <pre>
 *   ready QUORUM TIMEOUT_S            wait until the server answers; print when (epoch ms)
 *   create QUORUM TABLE FAMILY REGIONS RECORDS
 *                                     (re)create TABLE pre-split into REGIONS by YCSB's keys
 *   drop QUORUM TABLE                 disable and delete TABLE if it exists
 *   count QUORUM TABLE                print the number of rows of TABLE
 * </pre>
 */
public final class BenchAdmin {
  private BenchAdmin() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      usage();
    }
    String quorum = args[1];
    switch (args[0]) {
      case "ready" -> ready(quorum, Long.parseLong(args[2]));
      case "create" -> {
        try (Connection c = connect(quorum)) {
          create(c, args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]));
        }
      }
      case "drop" -> {
        try (Connection c = connect(quorum)) {
          drop(c.getAdmin(), TableName.valueOf(args[2]));
        }
      }
      case "count" -> {
        try (Connection c = connect(quorum)) {
          System.out.println("rows " + count(c, args[2]));
        }
      }
      default -> usage();
    }
  }

  private static void usage() {
    System.err.println("usage: BenchAdmin ready|create|drop|count QUORUM ...");
    System.exit(2);
  }

  private static Configuration conf(String quorum) {
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", quorum);
    return conf;
  }

  private static Connection connect(String quorum) throws IOException {
    return ConnectionFactory.createConnection(conf(quorum));
  }

  /**
   * Polls the server at QUORUM until it answers a master call (the table list) and shows a live
   * region server, then prints "answered" and the wall clock in epoch milliseconds. The caller
   * starts this before the server and waits for "warm" (the client's classes loaded) before it
   * starts the server, so the time measured is the server's, not this JVM's start.
   */
  private static void ready(String quorum, long timeoutSeconds) throws Exception {
    Configuration conf = conf(quorum);
    // Each attempt fails fast; the loop is what retries.
    conf.setInt("hbase.client.retries.number", 1);
    conf.setInt("hbase.client.pause", 50);
    conf.setInt("hbase.rpc.timeout", 2000);
    conf.setInt("hbase.client.operation.timeout", 3000);
    conf.setInt("hbase.client.meta.operation.timeout", 3000);
    conf.setInt("zookeeper.recovery.retry", 1);
    conf.setInt("zookeeper.recovery.retry.intervalmill", 50);
    conf.setInt("zookeeper.session.timeout", 5000);
    // Loads the connection and admin classes before the clock starts.
    Class.forName(ConnectionFactory.class.getName());
    Class.forName(Admin.class.getName());
    System.out.println("warm");
    System.out.flush();
    long deadline = System.currentTimeMillis() + timeoutSeconds * 1000;
    Exception last = null;
    while (System.currentTimeMillis() < deadline) {
      try (Connection c = ConnectionFactory.createConnection(conf);
          Admin admin = c.getAdmin()) {
        admin.listTableNames();
        if (!admin.getClusterMetrics().getLiveServerMetrics().isEmpty()) {
          System.out.println("answered " + System.currentTimeMillis());
          return;
        }
      } catch (Exception e) {
        last = e;
      }
      Thread.sleep(50);
    }
    System.err.println("no answer within " + timeoutSeconds + " s; last failure: " + last);
    System.exit(1);
  }

  private static void drop(Admin admin, TableName name) throws IOException {
    if (admin.tableExists(name)) {
      if (admin.isTableEnabled(name)) {
        admin.disableTable(name);
      }
      admin.deleteTable(name);
    }
  }

  /**
   * Split points that cut YCSB's keys into REGIONS equal parts. YCSB's core workload names
   * record N "user" + a hash of N (its default insert order, "hashed", without zero padding), so
   * sorting a sample of those names and taking its quantiles gives evenly loaded regions.
   */
  static byte[][] splits(int regions, long records) {
    long samples = Math.min(records, 100_000);
    long step = Math.max(1, records / samples);
    List<String> keys = new ArrayList<>();
    for (long n = 0; n < records; n += step) {
      keys.add("user" + Utils.hash(n));
    }
    Collections.sort(keys);
    byte[][] splits = new byte[regions - 1][];
    for (int i = 1; i < regions; i++) {
      splits[i - 1] = Bytes.toBytes(keys.get((int) ((long) keys.size() * i / regions)));
    }
    return splits;
  }

  private static void create(Connection c, String table, String family, int regions, long records)
      throws IOException {
    TableName name = TableName.valueOf(table);
    try (Admin admin = c.getAdmin()) {
      drop(admin, name);
      var descriptor = TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(family))
          .build();
      if (regions > 1) {
        admin.createTable(descriptor, splits(regions, records));
      } else {
        admin.createTable(descriptor);
      }
      System.out.println("created " + table + " with " + admin.getRegions(name).size()
          + " regions");
    }
  }

  private static long count(Connection c, String table) throws IOException {
    Scan scan = new Scan().setFilter(new FirstKeyOnlyFilter()).setCaching(1000);
    long rows = 0;
    try (Table t = c.getTable(TableName.valueOf(table));
        ResultScanner scanner = t.getScanner(scan)) {
      for (Result ignored : scanner) {
        rows++;
      }
    }
    return rows;
  }
}
