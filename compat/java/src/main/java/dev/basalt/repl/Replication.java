package dev.basalt.repl;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.replication.ReplicationPeerConfig;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The Java side of scripts/replication-suite: HBase replicating to Basalt.
 *
 * <pre>
 * setup   --hbase Q --basalt Q --table T --peer ID   same table on both (HBase's families
 *                                                     with REPLICATION_SCOPE 1); peer ID on
 *                                                     HBase naming Basalt's ZooKeeper
 * write   --hbase Q --table T --seconds N --seed S     puts, deletes of every kind,
 *                                                     increments, appends, row mutations on HBase
 * roll    --hbase Q                                    roll HBase's WALs (ends the open log)
 * compare --hbase Q --basalt Q --table T --wait N      every version of every cell, and every
 *                                                     delete marker, equal on both; polled
 *                                                     until equal or N seconds passed
 * </pre>
 *
 * Q is a ZooKeeper quorum, host:port. Exit 0 on success, 1 on a difference.
 */
public final class Replication {
  static final byte[][] FAMILIES = {Bytes.toBytes("f"), Bytes.toBytes("g")};
  static final int VERSIONS = 1000;
  static final int ROWS = 300;
  static final String[] QUALIFIERS = {"a", "b", "c"};

  private Replication() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) {
      opts.put(args[i], args[i + 1]);
    }
    switch (args.length == 0 ? "" : args[0]) {
      case "setup":
        setup(opts);
        break;
      case "write":
        write(opts);
        break;
      case "roll":
        roll(opts);
        break;
      case "compare":
        System.exit(compare(opts) ? 0 : 1);
        break;
      default:
        System.err.println("usage: setup|write|roll|compare --hbase Q ...");
        System.exit(2);
    }
  }

  static Connection connect(String quorum) throws IOException {
    Configuration conf = HBaseConfiguration.create();
    int colon = quorum.lastIndexOf(':');
    conf.set("hbase.zookeeper.quorum", quorum.substring(0, colon));
    conf.set("hbase.zookeeper.property.clientPort", quorum.substring(colon + 1));
    conf.setInt("hbase.client.retries.number", 10);
    conf.setLong("hbase.client.pause", 100);
    conf.setInt("hbase.client.operation.timeout", 120_000);
    conf.setInt("hbase.rpc.timeout", 60_000);
    return ConnectionFactory.createConnection(conf);
  }

  static void createTable(Admin admin, TableName name, int scope) throws IOException {
    if (admin.tableExists(name)) {
      return;
    }
    TableDescriptorBuilder table = TableDescriptorBuilder.newBuilder(name);
    for (byte[] family : FAMILIES) {
      table.setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(family)
          .setMaxVersions(VERSIONS).setScope(scope).build());
    }
    admin.createTable(table.build(), new byte[][] {Bytes.toBytes("row-150")});
  }

  static void setup(Map<String, String> o) throws IOException {
    TableName name = TableName.valueOf(o.get("--table"));
    try (Connection basalt = connect(o.get("--basalt")); Admin admin = basalt.getAdmin()) {
      // The sink's table: the same name and families (scope is the source's business).
      createTable(admin, name, HConstants.REPLICATION_SCOPE_LOCAL);
    }
    try (Connection hbase = connect(o.get("--hbase")); Admin admin = hbase.getAdmin()) {
      createTable(admin, name, HConstants.REPLICATION_SCOPE_GLOBAL);
      String peer = o.get("--peer");
      boolean exists = admin.listReplicationPeers().stream()
          .anyMatch(p -> p.getPeerId().equals(peer));
      if (!exists) {
        String key = o.get("--basalt") + ":/hbase";
        admin.addReplicationPeer(peer,
            ReplicationPeerConfig.newBuilder().setClusterKey(key).build());
        System.out.println("peer " + peer + " -> " + key);
      }
    }
  }

  static byte[] row(int i) {
    return Bytes.toBytes(String.format("row-%03d", i));
  }

  static void write(Map<String, String> o) throws IOException {
    TableName name = TableName.valueOf(o.get("--table"));
    long seconds = Long.parseLong(o.getOrDefault("--seconds", "30"));
    Random random = new Random(Long.parseLong(o.getOrDefault("--seed", "1")));
    Map<String, Long> counts = new HashMap<>();
    long end = System.currentTimeMillis() + seconds * 1000;
    try (Connection hbase = connect(o.get("--hbase")); Table table = hbase.getTable(name)) {
      long next = System.currentTimeMillis() + 5000;
      while (System.currentTimeMillis() < end) {
        String op = writeOne(table, random);
        counts.merge(op, 1L, Long::sum);
        if (System.currentTimeMillis() > next) {
          System.out.println("written so far: " + counts);
          System.out.flush();
          next += 5000;
        }
      }
    }
    long total = counts.values().stream().mapToLong(Long::longValue).sum();
    System.out.println("written: " + total + " operations " + counts);
  }

  /** One random operation; answers its name. */
  static String writeOne(Table table, Random random) throws IOException {
    byte[] row = row(random.nextInt(ROWS));
    byte[] family = FAMILIES[random.nextInt(FAMILIES.length)];
    byte[] qualifier = Bytes.toBytes(QUALIFIERS[random.nextInt(QUALIFIERS.length)]);
    // Explicit timestamps in a small window, so deletes meet versions.
    long ts = 1_000 + random.nextInt(50);
    int pick = random.nextInt(100);
    byte[] value = Bytes.toBytes("v" + random.nextInt(1_000_000));
    if (pick < 30) {
      table.put(new Put(row).addColumn(family, qualifier, value));
      return "put";
    } else if (pick < 50) {
      table.put(new Put(row).addColumn(family, qualifier, ts, value)
          .addColumn(family, Bytes.toBytes("d"), ts, value));
      return "put-ts";
    } else if (pick < 58) {
      table.delete(new Delete(row).addColumn(family, qualifier));
      return "delete-latest";
    } else if (pick < 63) {
      table.delete(new Delete(row).addColumn(family, qualifier, ts));
      return "delete-version";
    } else if (pick < 68) {
      table.delete(new Delete(row).addColumns(family, qualifier, ts));
      return "delete-columns";
    } else if (pick < 71) {
      table.delete(new Delete(row).addFamily(family, ts));
      return "delete-family";
    } else if (pick < 74) {
      table.delete(new Delete(row).addFamilyVersion(family, ts));
      return "delete-family-version";
    } else if (pick < 75) {
      table.delete(new Delete(row));
      return "delete-row";
    } else if (pick < 90) {
      table.increment(new Increment(row).addColumn(FAMILIES[0], Bytes.toBytes("n"), 1 + random.nextInt(5)));
      return "increment";
    } else if (pick < 95) {
      table.append(new org.apache.hadoop.hbase.client.Append(row)
          .addColumn(FAMILIES[1], Bytes.toBytes("log"), Bytes.toBytes("+" + random.nextInt(10))));
      return "append";
    } else {
      RowMutations mutations = new RowMutations(row);
      mutations.add(new Put(row).addColumn(family, qualifier, value));
      byte[] other = family == FAMILIES[0] ? FAMILIES[1] : FAMILIES[0];
      mutations.add(new Delete(row).addColumns(other, Bytes.toBytes("d")));
      table.mutateRow(mutations);
      return "row-mutations";
    }
  }

  static void roll(Map<String, String> o) throws IOException {
    try (Connection hbase = connect(o.get("--hbase")); Admin admin = hbase.getAdmin()) {
      for (ServerName server : admin.getRegionServers()) {
        admin.rollWALWriter(server);
        System.out.println("rolled the WAL of " + server);
      }
    }
  }

  /** Every cell of the table as text lines: visible versions, then delete markers. */
  static TreeSet<String> contents(Connection connection, TableName name) throws IOException {
    TreeSet<String> out = new TreeSet<>();
    try (Table table = connection.getTable(name)) {
      try (ResultScanner scanner = table.getScanner(new Scan().readAllVersions())) {
        for (Result result : scanner) {
          for (Cell cell : result.rawCells()) {
            out.add(describe(cell));
          }
        }
      }
      // Delete markers: a raw scan, markers only (what was masked and
      // dropped by a flush depends on when each side flushed; the markers
      // stay until a major compaction on both).
      try (ResultScanner scanner = table.getScanner(new Scan().setRaw(true).readAllVersions())) {
        for (Result result : scanner) {
          for (Cell cell : result.rawCells()) {
            if (CellUtil.isDelete(cell)) {
              out.add(describe(cell));
            }
          }
        }
      }
    }
    return out;
  }

  static String describe(Cell cell) {
    return Bytes.toStringBinary(CellUtil.cloneRow(cell)) + "/"
        + Bytes.toStringBinary(CellUtil.cloneFamily(cell)) + ":"
        + Bytes.toStringBinary(CellUtil.cloneQualifier(cell)) + "/" + cell.getTimestamp() + "/"
        + cell.getType() + "=" + Bytes.toStringBinary(CellUtil.cloneValue(cell));
  }

  /** The two sides' sizes and the first 20 lines only one side has. */
  static String difference(TreeSet<String> expected, TreeSet<String> got) {
    List<String> missing = new ArrayList<>();
    for (String s : expected) {
      if (!got.contains(s) && missing.size() < 20) {
        missing.add(s);
      }
    }
    List<String> extra = new ArrayList<>();
    for (String s : got) {
      if (!expected.contains(s) && extra.size() < 20) {
        extra.add(s);
      }
    }
    return "HBase has " + expected.size() + ", Basalt " + got.size()
        + "\n  only on HBase (first 20): " + missing + "\n  only on Basalt (first 20): " + extra;
  }

  static boolean compare(Map<String, String> o) throws Exception {
    TableName name = TableName.valueOf(o.get("--table"));
    long deadline = System.currentTimeMillis() + Long.parseLong(o.getOrDefault("--wait", "300")) * 1000;
    try (Connection hbase = connect(o.get("--hbase"));
        Connection basalt = connect(o.get("--basalt"))) {
      TreeSet<String> expected = contents(hbase, name);
      while (true) {
        TreeSet<String> got = contents(basalt, name);
        if (got.equals(expected)) {
          long markers = expected.stream().filter(s -> s.contains("/Delete")).count();
          System.out.println("equal: " + (expected.size() - markers) + " cell versions and "
              + markers + " delete markers on both");
          return true;
        }
        if (System.currentTimeMillis() > deadline) {
          System.out.println("DIFFERENT: " + difference(expected, got));
          return false;
        }
        Thread.sleep(2000);
        // HBase's side may still be changing only if a writer runs; re-read it too.
        expected = contents(hbase, name);
      }
    }
  }
}
