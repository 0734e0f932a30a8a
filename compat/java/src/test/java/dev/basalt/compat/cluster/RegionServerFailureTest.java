package dev.basalt.compat.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.basalt.compat.CompatBase;

/**
 * Against `basalt local-cluster` only (scripts/java-suite --cluster passes
 * basalt.cluster.regionserver.pids): a region moves and a region server is
 * SIGKILLed while a scan and a BufferedMutator are in flight; the client
 * finishes both without an error reaching the test, and every acknowledged
 * row reads back.
 */
@Tag("cluster")
class RegionServerFailureTest extends CompatBase {

  @Test
  void a_scan_and_a_buffered_mutator_survive_a_move_and_a_killed_region_server() throws Exception {
    String pids = System.getProperty("basalt.cluster.regionserver.pids", "");
    Assumptions.assumeFalse(pids.isEmpty(), "only against a local cluster");
    TableName name = createTable("failover",
        new byte[][] {Bytes.toBytes("r2"), Bytes.toBytes("r5"), Bytes.toBytes("r8")});
    int preloaded = 5000;
    try (Table t = conn.getTable(name)) {
      List<Put> puts = new ArrayList<>();
      for (int i = 0; i < preloaded; i++) {
        puts.add(new Put(Bytes.toBytes(String.format("r%d%05d", i % 10, i)))
            .addColumn(CF, Q, Bytes.toBytes("p" + i)));
      }
      t.put(puts);
    }
    ExecutorService pool = Executors.newFixedThreadPool(2);
    int written = 20_000;
    Future<Integer> writer = pool.submit(() -> {
      try (BufferedMutator m = conn.getBufferedMutator(
          new BufferedMutatorParams(name).writeBufferSize(64 << 10))) {
        for (int i = 0; i < written; i++) {
          m.mutate(new Put(Bytes.toBytes(String.format("w%d%05d", i % 10, i)))
              .addColumn(CF, Q, Bytes.toBytes("w" + i)));
        }
        m.flush();
      }
      return written;
    });
    Future<Integer> scanner = pool.submit(() -> {
      int n = 0;
      try (Table t = conn.getTable(name);
           ResultScanner rs = t.getScanner(new Scan().withStopRow(Bytes.toBytes("s")).setCaching(50))) {
        for (Result r : rs) {
          n++;
          if (n % 500 == 0) {
            Thread.sleep(20);
          }
        }
      }
      return n;
    });
    Thread.sleep(300);
    List<RegionInfo> regions = admin.getRegions(name);
    admin.move(regions.get(0).getEncodedNameAsBytes());
    // SIGKILL the region server that holds the second region.
    String victim = pids.split(",")[0].trim();
    Process kill = new ProcessBuilder("kill", "-9", victim).inheritIO().start();
    assertEquals(0, kill.waitFor());
    assertEquals(written, writer.get(10, TimeUnit.MINUTES));
    assertEquals(preloaded, scanner.get(10, TimeUnit.MINUTES));
    pool.shutdown();
    try (Table t = conn.getTable(name)) {
      int rows = 0;
      try (ResultScanner rs = t.getScanner(new Scan().setCaching(1000))) {
        for (Result r : rs) {
          rows++;
        }
      }
      assertEquals(preloaded + written, rows);
      assertEquals("w19999", Bytes.toString(
          t.get(new Get(Bytes.toBytes("w919999"))).getValue(CF, Q)));
    }
  }
}
