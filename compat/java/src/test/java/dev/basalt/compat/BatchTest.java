package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

/** Table.batch with mixed actions, and BufferedMutator. */
class BatchTest extends CompatBase {

  @Test
  void a_batch_of_puts_and_gets_answers_each_action() throws Exception {
    try (Table t = conn.getTable(createTable("mixed"))) {
      t.put(new Put(b("g")).addColumn(CF, Q, b("got")));
      List<Row> actions = Arrays.asList(
          new Put(b("p")).addColumn(CF, Q, b("put")),
          new Get(b("g")),
          new Delete(b("g2")));
      Object[] results = new Object[actions.size()];
      t.batch(actions, results);
      assertTrue(results[0] instanceof Result);
      assertEquals("got", s(((Result) results[1]).getValue(CF, Q)));
      assertEquals("put", s(t.get(new Get(b("p"))).getValue(CF, Q)));
    }
  }

  @Test
  void a_batch_holding_an_increment_and_an_append_answers_their_results() throws Exception {
    try (Table t = conn.getTable(createTable("incapp"))) {
      t.put(new Put(b("a")).addColumn(CF, Q, b("x")));
      List<Row> actions = Arrays.asList(
          new Increment(b("i")).addColumn(CF, Q, 3),
          new Append(b("a")).addColumn(CF, Q, b("y")),
          new Put(b("p")).addColumn(CF, Q, b("v")));
      Object[] results = new Object[actions.size()];
      t.batch(actions, results);
      assertEquals(3L, Bytes.toLong(((Result) results[0]).getValue(CF, Q)));
      assertEquals("xy", s(((Result) results[1]).getValue(CF, Q)));
    }
  }

  @Test
  void a_batch_reports_a_per_action_error_and_applies_the_rest() throws Exception {
    try (Table t = conn.getTable(createTable("errors"))) {
      List<Row> actions = Arrays.asList(
          new Put(b("ok")).addColumn(CF, Q, b("v")),
          new Put(b("bad")).addColumn(b("nosuchfamily"), Q, b("v")));
      Object[] results = new Object[actions.size()];
      RetriesExhaustedWithDetailsException e = assertThrows(
          RetriesExhaustedWithDetailsException.class, () -> t.batch(actions, results));
      assertEquals(1, e.getNumExceptions());
      assertArrayEquals(b("bad"), e.getRow(0).getRow());
      assertTrue(results[1] instanceof Throwable);
      assertEquals("v", s(t.get(new Get(b("ok"))).getValue(CF, Q)));
    }
  }

  @Test
  void a_batch_spanning_regions_applies_every_action() throws Exception {
    TableName name = createTable("regions", new byte[][] {b("m")});
    try (Table t = conn.getTable(name)) {
      List<Row> actions = new ArrayList<>();
      for (char c = 'a'; c <= 'z'; c++) {
        actions.add(new Put(b("" + c)).addColumn(CF, Q, b("v" + c)));
      }
      Object[] results = new Object[actions.size()];
      t.batch(actions, results);
      for (Object r : results) {
        assertTrue(r instanceof Result);
      }
      assertEquals("vb", s(t.get(new Get(b("b"))).getValue(CF, Q)));
      assertEquals("vy", s(t.get(new Get(b("y"))).getValue(CF, Q)));
    }
  }

  @Test
  void a_list_put_writes_every_row() throws Exception {
    try (Table t = conn.getTable(createTable("listput"))) {
      List<Put> puts = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        puts.add(new Put(b(String.format("r%04d", i))).addColumn(CF, Q, b("v" + i)));
      }
      t.put(puts);
      assertEquals("v499", s(t.get(new Get(b("r0499"))).getValue(CF, Q)));
      assertEquals(500, ScanTest.count(t, new Scan()));
    }
  }

  @Test
  void a_buffered_mutator_writes_tens_of_thousands_of_mutations() throws Exception {
    TableName name = createTable("bm", new byte[][] {b("r2"), b("r5")});
    int n = 30_000;
    try (BufferedMutator m = conn.getBufferedMutator(
        new BufferedMutatorParams(name).writeBufferSize(1 << 20))) {
      for (int i = 0; i < n; i++) {
        m.mutate(new Put(b(String.format("r%06d", i * 7 % 1_000_000 + 0)))
            .addColumn(CF, Q, b("v" + i)));
      }
      m.flush();
    }
    try (Table t = conn.getTable(name)) {
      assertEquals(n, ScanTest.count(t, new Scan().setCaching(1000)));
      assertEquals("v1", s(t.get(new Get(b("r000007"))).getValue(CF, Q)));
    }
  }

  @Test
  void a_buffered_mutator_applies_deletes_after_puts() throws Exception {
    TableName name = createTable("bmdel");
    try (BufferedMutator m = conn.getBufferedMutator(name)) {
      for (int i = 0; i < 100; i++) {
        m.mutate(new Put(b("r" + i)).addColumn(CF, Q, b("v")));
      }
      m.flush();
      for (int i = 0; i < 50; i++) {
        m.mutate(new Delete(b("r" + i)));
      }
    }
    try (Table t = conn.getTable(name)) {
      assertEquals(50, ScanTest.count(t, new Scan()));
    }
  }

  @Test
  void a_buffered_mutator_reports_a_bad_family_through_its_listener() throws Exception {
    TableName name = createTable("bmerr");
    List<Integer> failures = new ArrayList<>();
    BufferedMutatorParams params = new BufferedMutatorParams(name)
        .listener((e, mutator) -> failures.add(e.getNumExceptions()));
    try (BufferedMutator m = conn.getBufferedMutator(params)) {
      m.mutate(new Put(b("good")).addColumn(CF, Q, b("v")));
      m.mutate(new Put(b("bad")).addColumn(b("nosuch"), Q, b("v")));
      m.flush();
    } catch (Exception e) {
      failures.add(-1);
    }
    assertFalse(failures.isEmpty());
    try (Table t = conn.getTable(name)) {
      assertTrue(t.exists(new Get(b("good"))));
    }
  }
}
