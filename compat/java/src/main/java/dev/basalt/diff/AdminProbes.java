package dev.basalt.diff;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * Admin answers and the errors of common mistakes, compared between the servers: the descriptor
 * and regions of a created table, and the error class of each mistake a program makes (a missing
 * table or family, a disabled table, an existing table or namespace, a bad filter...).
 */
final class AdminProbes {
  private static final TableName TABLE = TableName.valueOf("diff_admin");
  private static final TableName MISSING = TableName.valueOf("diff_missing");
  private static final String NAMESPACE = "diff_ns";

  private AdminProbes() {}

  /** One probe: a name and what it does to a server through its admin and connection. */
  interface Probe {
    String run(Admin admin, Differential.Side side) throws Exception;
  }

  static void run(Differential.Side hbase, Differential.Side ours, Differential.Report report) throws Exception {
    for (Differential.Side side : new Differential.Side[] {hbase, ours}) {
      awaitMaster(side);
      cleanUp(side);
    }
    List<String> names = new ArrayList<>();
    List<Probe> probes = new ArrayList<>();
    add(names, probes, "create a table with two split keys: its regions' start keys",
        (admin, side) -> {
          admin.createTable(
              descriptor(TABLE), new byte[][] {Bytes.toBytes("g"), Bytes.toBytes("p")});
          List<String> starts = new ArrayList<>();
          for (RegionInfo region : admin.getRegions(TABLE)) {
            starts.add(Bytes.toStringBinary(region.getStartKey()) + ".."
                + Bytes.toStringBinary(region.getEndKey()));
          }
          return starts.toString();
        });
    add(names, probes, "the created table's families as described", (admin, side) -> {
      TableDescriptor described = admin.getDescriptor(TABLE);
      List<String> families = new ArrayList<>();
      for (ColumnFamilyDescriptor family : described.getColumnFamilies()) {
        families.add(family.getNameAsString() + " versions=" + family.getMaxVersions()
            + " min=" + family.getMinVersions() + " ttl=" + family.getTimeToLive()
            + " keepDeleted=" + family.getKeepDeletedCells()
            + " nvb=" + family.isNewVersionBehavior());
      }
      return described.getTableName() + " " + families;
    });
    add(names, probes, "create the existing table again",
        (admin, side) -> { admin.createTable(descriptor(TABLE)); return "ok"; });
    add(names, probes, "create a table without families", (admin, side) -> {
      admin.createTable(TableDescriptorBuilder.newBuilder(MISSING).build());
      return "ok";
    });
    add(names, probes, "get from a missing table", (admin, side) -> {
      try (Table table = side.connection.getTable(MISSING)) {
        return Answer.result(table.get(new Get(Bytes.toBytes("r"))), 0);
      }
    });
    add(names, probes, "describe a missing table",
        (admin, side) -> admin.getDescriptor(MISSING).toString());
    add(names, probes, "a missing table exists?",
        (admin, side) -> Boolean.toString(admin.tableExists(MISSING)));
    add(names, probes, "put into a missing family", (admin, side) -> {
      try (Table table = side.connection.getTable(TABLE)) {
        table.put(new Put(Bytes.toBytes("r")).addColumn(Bytes.toBytes("zz"), Bytes.toBytes("q"),
            Bytes.toBytes("v")));
        return "ok";
      }
    });
    add(names, probes, "get a missing family", (admin, side) -> {
      try (Table table = side.connection.getTable(TABLE)) {
        return Answer.result(table.get(new Get(Bytes.toBytes("r")).addFamily(Bytes.toBytes("zz"))), 0);
      }
    });
    add(names, probes, "scan with a filter class the server does not have", (admin, side) -> {
      try (Table table = side.connection.getTable(TABLE)) {
        return table.getScanner(new Scan().setFilter(new UnknownFilter())).next() + "";
      }
    });
    add(names, probes, "delete an enabled table",
        (admin, side) -> { admin.deleteTable(TABLE); return "ok"; });
    add(names, probes, "enable an enabled table",
        (admin, side) -> { admin.enableTable(TABLE); return "ok"; });
    add(names, probes, "disable the table",
        (admin, side) -> { admin.disableTable(TABLE); return "ok"; });
    add(names, probes, "disable a disabled table",
        (admin, side) -> { admin.disableTable(TABLE); return "ok"; });
    add(names, probes, "the disabled table is enabled? disabled?",
        (admin, side) -> admin.isTableEnabled(TABLE) + " " + admin.isTableDisabled(TABLE));
    add(names, probes, "put into a disabled table", (admin, side) -> {
      try (Table table = side.connection.getTable(TABLE)) {
        table.put(new Put(Bytes.toBytes("r")).addColumn(Bytes.toBytes("a"), Bytes.toBytes("q"),
            Bytes.toBytes("v")));
        return "ok";
      }
    });
    add(names, probes, "delete the disabled table",
        (admin, side) -> { admin.deleteTable(TABLE); return "ok"; });
    add(names, probes, "disable a missing table",
        (admin, side) -> { admin.disableTable(MISSING); return "ok"; });
    add(names, probes, "add a family to a missing table", (admin, side) -> {
      admin.addColumnFamily(MISSING, ColumnFamilyDescriptorBuilder.of("x"));
      return "ok";
    });
    add(names, probes, "create a namespace", (admin, side) -> {
      admin.createNamespace(NamespaceDescriptor.create(NAMESPACE).build());
      return "ok";
    });
    add(names, probes, "create the existing namespace", (admin, side) -> {
      admin.createNamespace(NamespaceDescriptor.create(NAMESPACE).build());
      return "ok";
    });
    add(names, probes, "create a table in a missing namespace", (admin, side) -> {
      admin.createTable(descriptor(TableName.valueOf("diff_nowhere", "t")));
      return "ok";
    });
    add(names, probes, "create a table in the namespace, then delete the namespace", (admin, side) -> {
      admin.createTable(descriptor(TableName.valueOf(NAMESPACE, "t")));
      admin.deleteNamespace(NAMESPACE);
      return "ok";
    });
    add(names, probes, "delete a missing namespace",
        (admin, side) -> { admin.deleteNamespace("diff_no_such_ns"); return "ok"; });
    add(names, probes, "delete the default namespace",
        (admin, side) -> { admin.deleteNamespace("default"); return "ok"; });
    add(names, probes, "list the namespace's tables", (admin, side) -> {
      List<String> tables = new ArrayList<>();
      for (TableName name : admin.listTableNamesByNamespace(NAMESPACE)) {
        tables.add(name.getNameAsString());
      }
      return tables.toString();
    });
    for (int i = 0; i < probes.size(); i++) {
      String expected = apply(probes.get(i), hbase);
      String actual = apply(probes.get(i), ours);
      report.compare(i, names.get(i), expected, actual);
    }
    for (Differential.Side side : new Differential.Side[] {hbase, ours}) {
      cleanUp(side);
    }
  }

  /**
   * Waits until the server's master answers namespace calls: HBase's master answers
   * PleaseHoldException ("Master is initializing") for a while after its region server serves.
   */
  private static void awaitMaster(Differential.Side side) throws Exception {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(180);
    while (true) {
      try (Admin admin = side.connection.getAdmin()) {
        admin.listNamespaceDescriptors();
        return;
      } catch (java.io.IOException initializing) {
        if (System.nanoTime() > deadline) {
          throw initializing;
        }
        Thread.sleep(500);
      }
    }
  }

  private static void add(List<String> names, List<Probe> probes, String name, Probe probe) {
    names.add(name);
    probes.add(probe);
  }

  private static String apply(Probe probe, Differential.Side side) {
    try (Admin admin = side.connection.getAdmin()) {
      return probe.run(admin, side);
    } catch (Exception error) {
      return Answer.error(error);
    }
  }

  private static TableDescriptor descriptor(TableName name) {
    return Differential.descriptor(name, false);
  }

  private static void cleanUp(Differential.Side side) throws Exception {
    side.drop(TABLE);
    side.drop(MISSING);
    side.drop(TableName.valueOf(NAMESPACE, "t"));
    try (Admin admin = side.connection.getAdmin()) {
      for (NamespaceDescriptor namespace : admin.listNamespaceDescriptors()) {
        if (namespace.getName().equals(NAMESPACE)) {
          admin.deleteNamespace(NAMESPACE);
        }
      }
    }
  }
}
