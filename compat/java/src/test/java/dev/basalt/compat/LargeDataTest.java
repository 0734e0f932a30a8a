package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Random;
import org.apache.hadoop.hbase.client.*;
import org.junit.jupiter.api.Test;

/** Large values and wide rows. */
class LargeDataTest extends CompatBase {

  @Test
  void an_eight_mebibyte_value_round_trips() throws Exception {
    byte[] value = new byte[8 << 20];
    new Random(27).nextBytes(value);
    try (Table t = conn.getTable(createTable("big"))) {
      t.put(new Put(b("big")).addColumn(CF, Q, value));
      assertArrayEquals(value, t.get(new Get(b("big"))).getValue(CF, Q));
    }
  }

  @Test
  void a_hundred_thousand_cell_row_reads_back_with_batching() throws Exception {
    int n = 100_000;
    try (Table t = conn.getTable(createTable("wide"))) {
      for (int start = 0; start < n; start += 10_000) {
        Put p = new Put(b("wide"));
        for (int i = start; i < start + 10_000; i++) {
          p.addColumn(CF, b(String.format("c%06d", i)), b("v"));
        }
        t.put(p);
      }
      int cells = 0;
      int parts = 0;
      try (ResultScanner rs = t.getScanner(new Scan().setBatch(5000).setCaching(2))) {
        for (Result r : rs) {
          assertTrue(r.size() <= 5000);
          cells += r.size();
          parts++;
        }
      }
      assertEquals(n, cells);
      assertEquals(20, parts);
    }
  }
}
