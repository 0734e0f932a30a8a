package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.client.metrics.ScanMetrics;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.RowFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Scans: ranges, direction, limits, caching, batching, versions, raw, metrics, leases. */
class ScanTest extends CompatBase {

  static int count(Table t, Scan scan) throws IOException {
    int n = 0;
    try (ResultScanner rs = t.getScanner(scan)) {
      for (Result r : rs) {
        n++;
      }
    }
    return n;
  }

  static List<String> rows(Table t, Scan scan) throws IOException {
    List<String> out = new ArrayList<>();
    try (ResultScanner rs = t.getScanner(scan)) {
      for (Result r : rs) {
        out.add(Bytes.toString(r.getRow()));
      }
    }
    return out;
  }

  private Table tenRows(String what) throws IOException {
    Table t = conn.getTable(createTable(what));
    List<Put> puts = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      puts.add(new Put(b("r" + i)).addColumn(CF, Q, b("v" + i)).addColumn(CF2, Q, b("w" + i)));
    }
    t.put(puts);
    return t;
  }

  @Test
  void a_full_scan_returns_every_row_in_order() throws Exception {
    try (Table t = tenRows("full")) {
      List<String> rows = rows(t, new Scan());
      assertEquals(10, rows.size());
      assertEquals("r0", rows.get(0));
      assertEquals("r9", rows.get(9));
    }
  }

  @Test
  void start_is_inclusive_and_stop_exclusive_by_default() throws Exception {
    try (Table t = tenRows("range")) {
      assertEquals(List.of("r2", "r3", "r4"), rows(t, new Scan().withStartRow(b("r2")).withStopRow(b("r5"))));
    }
  }

  @Test
  void start_exclusive_and_stop_inclusive_are_honoured() throws Exception {
    try (Table t = tenRows("incl")) {
      assertEquals(List.of("r3", "r4", "r5"),
          rows(t, new Scan().withStartRow(b("r2"), false).withStopRow(b("r5"), true)));
    }
  }

  @Test
  void a_reversed_scan_walks_backwards() throws Exception {
    try (Table t = tenRows("rev")) {
      List<String> rows = rows(t, new Scan().setReversed(true));
      assertEquals(10, rows.size());
      assertEquals("r9", rows.get(0));
      assertEquals("r0", rows.get(9));
    }
  }

  @Test
  void a_reversed_scan_starts_at_its_start_row() throws Exception {
    try (Table t = tenRows("revrange")) {
      assertEquals(List.of("r5", "r4", "r3"),
          rows(t, new Scan().setReversed(true).withStartRow(b("r5")).withStopRow(b("r2"))));
    }
  }

  @Test
  void a_limit_stops_the_scan() throws Exception {
    try (Table t = tenRows("limit")) {
      assertEquals(List.of("r0", "r1", "r2"), rows(t, new Scan().setLimit(3)));
    }
  }

  @Test
  void caching_of_one_still_returns_every_row() throws Exception {
    try (Table t = tenRows("caching")) {
      assertEquals(10, count(t, new Scan().setCaching(1)));
    }
  }

  @Test
  void a_row_prefix_scan_returns_matching_rows() throws Exception {
    try (Table t = conn.getTable(createTable("prefix"))) {
      for (String r : new String[] {"aa1", "ab1", "ab2", "ac1"}) {
        t.put(new Put(b(r)).addColumn(CF, Q, b("v")));
      }
      assertEquals(List.of("ab1", "ab2"), rows(t, new Scan().setStartStopRowForPrefixScan(b("ab"))));
    }
  }

  @Test
  void a_family_scan_returns_only_that_family() throws Exception {
    try (Table t = tenRows("family")) {
      try (ResultScanner rs = t.getScanner(new Scan().addFamily(CF2))) {
        Result r = rs.next();
        assertEquals(1, r.size());
        assertEquals("w0", s(r.getValue(CF2, Q)));
      }
    }
  }

  @Test
  void batch_splits_a_wide_row_into_parts() throws Exception {
    try (Table t = conn.getTable(createTable("batch"))) {
      Put p = new Put(b("wide"));
      for (int i = 0; i < 10; i++) {
        p.addColumn(CF, b(String.format("c%02d", i)), b("v"));
      }
      t.put(p);
      List<Integer> sizes = new ArrayList<>();
      try (ResultScanner rs = t.getScanner(new Scan().setBatch(4))) {
        for (Result r : rs) {
          sizes.add(r.size());
          assertEquals("wide", Bytes.toString(r.getRow()));
        }
      }
      assertEquals(List.of(4, 4, 2), sizes);
    }
  }

  @Test
  void partial_results_reassemble_to_every_cell() throws Exception {
    try (Table t = conn.getTable(createTable("partial"))) {
      Put p = new Put(b("wide"));
      for (int i = 0; i < 200; i++) {
        p.addColumn(CF, b(String.format("c%03d", i)), new byte[1000]);
      }
      t.put(p);
      int cells = 0;
      int results = 0;
      try (ResultScanner rs = t.getScanner(
          new Scan().setAllowPartialResults(true).setMaxResultSize(10_000))) {
        for (Result r : rs) {
          cells += r.size();
          results++;
        }
      }
      assertEquals(200, cells);
      assertTrue(results > 1, "a 200 kB row under a 10 kB result size arrives in parts");
    }
  }

  @Test
  void a_small_max_result_size_still_returns_whole_rows() throws Exception {
    try (Table t = tenRows("maxsize")) {
      try (ResultScanner rs = t.getScanner(new Scan().setMaxResultSize(1))) {
        int n = 0;
        for (Result r : rs) {
          assertEquals(2, r.size());
          n++;
        }
        assertEquals(10, n);
      }
    }
  }

  @Test
  void a_time_range_scan_sees_only_cells_inside_it() throws Exception {
    try (Table t = conn.getTable(createTable("timerange"))) {
      t.put(new Put(b("a")).addColumn(CF, Q, 100L, b("old")));
      t.put(new Put(b("b")).addColumn(CF, Q, 200L, b("new")));
      assertEquals(List.of("b"), rows(t, new Scan().setTimeRange(150, 300)));
    }
  }

  @Test
  void a_scan_reads_all_versions_when_asked() throws Exception {
    try (Table t = conn.getTable(createTable("versions"))) {
      for (long ts = 1; ts <= 3; ts++) {
        t.put(new Put(b("r")).addColumn(CF, Q, ts, b("v" + ts)));
      }
      try (ResultScanner rs = t.getScanner(new Scan().readAllVersions())) {
        assertEquals(3, rs.next().getColumnCells(CF, Q).size());
      }
      try (ResultScanner rs = t.getScanner(new Scan())) {
        assertEquals(1, rs.next().getColumnCells(CF, Q).size());
      }
    }
  }

  @Test
  void a_raw_scan_shows_delete_markers() throws Exception {
    try (Table t = conn.getTable(createTable("raw"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 1L, b("v")));
      t.delete(new Delete(b("r")).addColumns(CF, Q, 2L));
      assertEquals(0, count(t, new Scan()));
      try (ResultScanner rs = t.getScanner(new Scan().setRaw(true).readAllVersions())) {
        Result r = rs.next();
        assertNotNull(r);
        boolean sawMarker = false;
        boolean sawPut = false;
        for (Cell c : r.rawCells()) {
          if (CellUtil.isDelete(c)) {
            sawMarker = true;
            assertEquals(2L, c.getTimestamp());
          } else {
            sawPut = true;
          }
        }
        assertTrue(sawMarker);
        assertTrue(sawPut);
      }
    }
  }

  @Test
  void scan_metrics_count_rows_and_rpcs() throws Exception {
    try (Table t = tenRows("metrics")) {
      Scan scan = new Scan().setScanMetricsEnabled(true).setCaching(3);
      try (ResultScanner rs = t.getScanner(scan)) {
        int n = 0;
        for (Result r : rs) {
          n++;
        }
        assertEquals(10, n);
        ScanMetrics m = rs.getScanMetrics();
        assertNotNull(m);
        assertEquals(10, m.countOfRowsScanned.get());
        assertEquals(0, m.countOfRowsFiltered.get());
        assertTrue(m.countOfRPCcalls.get() >= 4);
      }
    }
  }

  @Test
  void scan_metrics_count_the_rows_a_filter_dropped() throws Exception {
    try (Table t = tenRows("metricsfiltered")) {
      Scan scan = new Scan().setScanMetricsEnabled(true)
          .setFilter(new RowFilter(CompareOperator.EQUAL, new BinaryComparator(b("r3"))));
      try (ResultScanner rs = t.getScanner(scan)) {
        int n = 0;
        for (Result r : rs) {
          n++;
        }
        assertEquals(1, n);
        ScanMetrics m = rs.getScanMetrics();
        assertEquals(10, m.countOfRowsScanned.get());
        assertEquals(9, m.countOfRowsFiltered.get());
      }
    }
  }

  @Test
  void a_scanner_idle_past_its_lease_is_reopened_by_the_client_without_losing_rows()
      throws Exception {
    // The server drops a scanner idle past its lease and answers its next
    // call with UnknownScannerException; HBase 2's client then opens a new
    // scanner after the last row it returned (the reopening counts as one
    // more region in the scan metrics). Rows of 1 MiB fill the client's
    // prefetch cache, so the server-side scanner is really left idle.
    // Only where the script started the server with a short lease (not
    // the local cluster, whose lease is HBase's minute).
    Assumptions.assumeTrue(System.getProperty("basalt.scanner.lease.ms") != null,
        "the server's scanner lease is not known to be short");
    long lease = Long.getLong("basalt.scanner.lease.ms");
    Table t = conn.getTable(createTable("lease"));
    byte[] big = new byte[1 << 20];
    for (int i = 0; i < 16; i++) {
      t.put(new Put(b(String.format("r%02d", i))).addColumn(CF, Q, big));
    }
    Scan scan = new Scan().setCaching(1).setScanMetricsEnabled(true);
    List<String> seen = new ArrayList<>();
    try (ResultScanner rs = t.getScanner(scan)) {
      seen.add(Bytes.toString(rs.next().getRow()));
      Thread.sleep(lease * 2 + 1000);
      for (Result r : rs) {
        seen.add(Bytes.toString(r.getRow()));
      }
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        expected.add(String.format("r%02d", i));
      }
      assertEquals(expected, seen);
      assertTrue(rs.getScanMetrics().countOfRegions.get() >= 2,
          "the expired scanner was reopened: " + rs.getScanMetrics().getMetricsMap());
    } finally {
      t.close();
    }
  }

  @Test
  void an_empty_table_scans_to_nothing() throws Exception {
    try (Table t = conn.getTable(createTable("emptytbl"))) {
      assertEquals(0, count(t, new Scan()));
    }
  }

  @Test
  void a_scan_across_regions_returns_every_row_once() throws Exception {
    TableName name = createTable("regions", new byte[][] {b("r3"), b("r6")});
    try (Table t = conn.getTable(name)) {
      List<Put> puts = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        puts.add(new Put(b("r" + i)).addColumn(CF, Q, b("v")));
      }
      t.put(puts);
      List<String> rows = rows(t, new Scan().setCaching(2));
      assertEquals(10, rows.size());
      assertEquals("r0", rows.get(0));
      assertEquals("r9", rows.get(9));
      List<String> back = rows(t, new Scan().setReversed(true).setCaching(2));
      assertEquals("r9", back.get(0));
      assertEquals(10, back.size());
    }
  }

  @Test
  void a_scan_survives_a_region_split_while_it_runs() throws Exception {
    TableName name = createTable("splitting");
    try (Table t = conn.getTable(name)) {
      List<Put> puts = new ArrayList<>();
      for (int i = 0; i < 2000; i++) {
        puts.add(new Put(b(String.format("r%05d", i))).addColumn(CF, Q, b("v" + i)));
      }
      t.put(puts);
      List<String> seen = new ArrayList<>();
      try (ResultScanner rs = t.getScanner(new Scan().setCaching(100))) {
        for (int i = 0; i < 300; i++) {
          seen.add(Bytes.toString(rs.next().getRow()));
        }
        admin.split(name, b("r01000"));
        waitForRegions(name, 2);
        for (Result r : rs) {
          seen.add(Bytes.toString(r.getRow()));
        }
      }
      assertEquals(2000, seen.size());
      assertEquals(2000, seen.stream().distinct().count());
      assertEquals("r01999", seen.get(1999));
    }
  }

  static void waitForRegions(TableName name, int wanted) throws Exception {
    for (int i = 0; i < 600; i++) {
      if (admin.getRegions(name).size() >= wanted) {
        return;
      }
      Thread.sleep(100);
    }
    fail("table " + name + " never reached " + wanted + " regions");
  }
}
