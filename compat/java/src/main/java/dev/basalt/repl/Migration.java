package dev.basalt.repl;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.io.compress.Compression;
import org.apache.hadoop.hbase.io.encoding.DataBlockEncoding;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The Java side of scripts/import-suite: tables HBase writes and snapshots, which Basalt then
 * imports from HBase's files.
 *
 * <pre>
 * prepare --hbase Q --seed S     one table per data block encoding and compression HBase can
 *                                write here, each with puts (many versions), deletes of every
 *                                kind and per-cell TTLs over three flushes and a memstore left
 *                                unflushed; then a snapshot of each (prints "table T snapshot N")
 * snapshot --hbase Q --table T --name N
 *                                flush T and snapshot it as N (scripts/bench-import)
 * compare --hbase Q --basalt Q --table T
 *                                every version of every cell and every delete marker equal on
 *                                both (Replication's comparison, no waiting)
 * </pre>
 */
public final class Migration {
  static final byte[][] FAMILIES = {Bytes.toBytes("f"), Bytes.toBytes("g")};
  static final String[] QUALIFIERS = {"a", "b", "c", ""};
  static final int ROWS = 300;

  /** Each encoding at least once, each compression HBase 2.6.4 writes here at least once. */
  static final Object[][] SPECS = {
    {DataBlockEncoding.NONE, Compression.Algorithm.NONE},
    {DataBlockEncoding.PREFIX, Compression.Algorithm.GZ},
    {DataBlockEncoding.DIFF, Compression.Algorithm.SNAPPY},
    {DataBlockEncoding.FAST_DIFF, Compression.Algorithm.LZ4},
    {DataBlockEncoding.ROW_INDEX_V1, Compression.Algorithm.GZ},
    {DataBlockEncoding.FAST_DIFF, Compression.Algorithm.NONE},
  };

  private Migration() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) {
      opts.put(args[i], args[i + 1]);
    }
    switch (args.length == 0 ? "" : args[0]) {
      case "prepare":
        prepare(opts);
        break;
      case "snapshot":
        try (Connection hbase = Replication.connect(opts.get("--hbase"));
            Admin admin = hbase.getAdmin()) {
          TableName table = TableName.valueOf(opts.get("--table"));
          admin.flush(table);
          admin.snapshot(opts.get("--name"), table);
          System.out.println("table " + table.getNameAsString() + " snapshot " + opts.get("--name"));
        }
        break;
      case "compare":
        System.exit(compare(opts) ? 0 : 1);
        break;
      default:
        System.err.println("usage: prepare|compare --hbase Q ...");
        System.exit(2);
    }
  }

  static String tableName(DataBlockEncoding encoding, Compression.Algorithm compression) {
    return "imp_" + encoding.name().toLowerCase().replace("_", "") + "_"
        + compression.getName().toLowerCase();
  }

  static void prepare(Map<String, String> o) throws Exception {
    long seed = Long.parseLong(o.getOrDefault("--seed", "1"));
    try (Connection hbase = Replication.connect(o.get("--hbase"));
        Admin admin = hbase.getAdmin()) {
      for (Object[] spec : SPECS) {
        DataBlockEncoding encoding = (DataBlockEncoding) spec[0];
        Compression.Algorithm compression = (Compression.Algorithm) spec[1];
        TableName name = TableName.valueOf(tableName(encoding, compression));
        TableDescriptorBuilder table = TableDescriptorBuilder.newBuilder(name);
        for (byte[] family : FAMILIES) {
          table.setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(family)
              .setMaxVersions(5)
              .setDataBlockEncoding(encoding)
              .setCompressionType(compression)
              // Small blocks: many per file, so the index has entries to follow.
              .setBlocksize(4096)
              // No compaction on HBase's side: one that takes every file drops the delete
              // markers the comparison counts, after the snapshot kept them.
              .setConfiguration("hbase.hstore.compactionThreshold", "100")
              .build());
        }
        admin.createTable(table.build(),
            new byte[][] {Bytes.toBytes("row-100"), Bytes.toBytes("row-200")});
        write(hbase, admin, name, new Random(seed));
        String snapshot = "snap_" + name.getNameAsString();
        admin.snapshot(snapshot, name);
        System.out.println("table " + name.getNameAsString() + " snapshot " + snapshot);
      }
    }
  }

  static byte[] row(int i) {
    return Bytes.toBytes(String.format("row-%03d", i));
  }

  /** Three rounds, each flushed, then a fourth left in the memstore (the snapshot flushes it). */
  static void write(Connection hbase, Admin admin, TableName name, Random random)
      throws IOException {
    try (Table table = hbase.getTable(name)) {
      for (int round = 0; round < 4; round++) {
        List<Put> puts = new ArrayList<>();
        for (int r = 0; r < ROWS; r++) {
          if (round > 0 && random.nextInt(3) != 0) {
            continue;
          }
          Put put = new Put(row(r));
          for (byte[] family : FAMILIES) {
            for (String q : QUALIFIERS) {
              int versions = 1 + random.nextInt(3);
              for (int v = 0; v < versions; v++) {
                long ts = 1_000_000L + round * 100 + v * 10 + random.nextInt(10);
                byte[] value = new byte[random.nextInt(40)];
                random.nextBytes(value);
                put.addColumn(family, Bytes.toBytes(q), ts, value);
              }
            }
          }
          if (random.nextInt(10) == 0) {
            // A per-cell TTL (an hour past now: still visible when compared).
            put.setTTL(3_600_000L);
          }
          puts.add(put);
        }
        table.put(puts);
        List<Delete> deletes = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
          byte[] r = row(random.nextInt(ROWS));
          byte[] family = FAMILIES[random.nextInt(FAMILIES.length)];
          byte[] q = Bytes.toBytes(QUALIFIERS[random.nextInt(QUALIFIERS.length)]);
          long ts = 1_000_000L + round * 100 + random.nextInt(100);
          Delete delete = new Delete(r);
          switch (random.nextInt(4)) {
            case 0:
              delete.addColumn(family, q, ts);
              break;
            case 1:
              delete.addColumns(family, q, ts);
              break;
            case 2:
              delete.addFamily(family, ts);
              break;
            default:
              delete.addFamilyVersion(family, ts);
              break;
          }
          deletes.add(delete);
        }
        table.delete(deletes);
        if (round < 3) {
          admin.flush(name);
        }
      }
    }
  }

  static boolean compare(Map<String, String> o) throws Exception {
    TableName name = TableName.valueOf(o.get("--table"));
    try (Connection hbase = Replication.connect(o.get("--hbase"));
        Connection basalt = Replication.connect(o.get("--basalt"))) {
      TreeSet<String> expected = Replication.contents(hbase, name);
      TreeSet<String> got = Replication.contents(basalt, name);
      long markers = expected.stream().filter(s -> s.contains("/Delete")).count();
      if (got.equals(expected)) {
        System.out.println("equal " + name.getNameAsString() + ": "
            + (expected.size() - markers) + " cell versions and " + markers
            + " delete markers on both");
        return true;
      }
      System.out.println("DIFFERENT " + name.getNameAsString() + ": "
          + Replication.difference(expected, got));
      return false;
    }
  }
}
