package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

/** Single-row operations through Table: put, get, exists, delete, increment, append, checks. */
class TableOpsTest extends CompatBase {

  @Test
  void a_put_reads_back_through_get() throws Exception {
    try (Table t = conn.getTable(createTable("put"))) {
      t.put(new Put(b("r1")).addColumn(CF, Q, b("v1")));
      assertEquals("v1", s(t.get(new Get(b("r1"))).getValue(CF, Q)));
    }
  }

  @Test
  void a_get_of_a_missing_row_is_empty() throws Exception {
    try (Table t = conn.getTable(createTable("missing"))) {
      Result r = t.get(new Get(b("nope")));
      assertTrue(r.isEmpty());
      assertNull(r.getRow());
    }
  }

  @Test
  void exists_answers_true_and_false() throws Exception {
    try (Table t = conn.getTable(createTable("exists"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("v")));
      assertTrue(t.exists(new Get(b("r"))));
      assertFalse(t.exists(new Get(b("x"))));
    }
  }

  @Test
  void exists_for_many_gets_answers_each() throws Exception {
    try (Table t = conn.getTable(createTable("existsall"))) {
      t.put(new Put(b("a")).addColumn(CF, Q, b("v")));
      boolean[] e = t.exists(Arrays.asList(new Get(b("a")), new Get(b("b"))));
      assertArrayEquals(new boolean[] {true, false}, e);
    }
  }

  @Test
  void a_get_of_one_column_returns_only_that_column() throws Exception {
    try (Table t = conn.getTable(createTable("getcol"))) {
      t.put(new Put(b("r")).addColumn(CF, b("a"), b("1")).addColumn(CF, b("b"), b("2")));
      Result r = t.get(new Get(b("r")).addColumn(CF, b("b")));
      assertEquals(1, r.size());
      assertEquals("2", s(r.getValue(CF, b("b"))));
    }
  }

  @Test
  void a_get_of_one_family_returns_only_that_family() throws Exception {
    try (Table t = conn.getTable(createTable("getfam"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("1")).addColumn(CF2, Q, b("2")));
      Result r = t.get(new Get(b("r")).addFamily(CF2));
      assertEquals(1, r.size());
      assertEquals("2", s(r.getValue(CF2, Q)));
    }
  }

  @Test
  void many_gets_answer_in_order() throws Exception {
    try (Table t = conn.getTable(createTable("multiget"))) {
      for (int i = 0; i < 10; i++) {
        t.put(new Put(b("r" + i)).addColumn(CF, Q, b("v" + i)));
      }
      List<Get> gets = new ArrayList<>();
      for (int i = 9; i >= 0; i--) {
        gets.add(new Get(b("r" + i)));
      }
      gets.add(new Get(b("zz")));
      Result[] rs = t.get(gets);
      assertEquals(11, rs.length);
      for (int i = 0; i < 10; i++) {
        assertEquals("v" + (9 - i), s(rs[i].getValue(CF, Q)));
      }
      assertTrue(rs[10].isEmpty());
    }
  }

  @Test
  void versions_are_kept_up_to_the_family_maximum() throws Exception {
    try (Table t = conn.getTable(createTable("versions"))) {
      for (long ts = 1; ts <= 5; ts++) {
        t.put(new Put(b("r")).addColumn(CF, Q, ts, b("v" + ts)));
      }
      Result r = t.get(new Get(b("r")).readAllVersions());
      List<Cell> cells = r.getColumnCells(CF, Q);
      assertEquals(3, cells.size());
      assertEquals(5, cells.get(0).getTimestamp());
      assertEquals(3, cells.get(2).getTimestamp());
    }
  }

  @Test
  void a_get_with_read_versions_two_returns_the_two_newest() throws Exception {
    try (Table t = conn.getTable(createTable("readv"))) {
      for (long ts = 1; ts <= 3; ts++) {
        t.put(new Put(b("r")).addColumn(CF, Q, ts, b("v" + ts)));
      }
      List<Cell> cells = t.get(new Get(b("r")).readVersions(2)).getColumnCells(CF, Q);
      assertEquals(2, cells.size());
      assertEquals("v3", Bytes.toString(CellUtil.cloneValue(cells.get(0))));
      assertEquals("v2", Bytes.toString(CellUtil.cloneValue(cells.get(1))));
    }
  }

  @Test
  void a_get_with_a_time_range_sees_only_cells_inside_it() throws Exception {
    try (Table t = conn.getTable(createTable("gettr"))) {
      for (long ts = 10; ts <= 30; ts += 10) {
        t.put(new Put(b("r")).addColumn(CF, Q, ts, b("v" + ts)));
      }
      Result r = t.get(new Get(b("r")).setTimeRange(10, 25).readAllVersions());
      List<Cell> cells = r.getColumnCells(CF, Q);
      assertEquals(2, cells.size());
      assertEquals(20, cells.get(0).getTimestamp());
    }
  }

  @Test
  void a_get_with_a_timestamp_sees_that_version() throws Exception {
    try (Table t = conn.getTable(createTable("getts"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 5L, b("five")));
      t.put(new Put(b("r")).addColumn(CF, Q, 7L, b("seven")));
      assertEquals("five", s(t.get(new Get(b("r")).setTimestamp(5L)).getValue(CF, Q)));
    }
  }

  @Test
  void deleting_a_row_removes_every_family() throws Exception {
    try (Table t = conn.getTable(createTable("delrow"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("1")).addColumn(CF2, Q, b("2")));
      t.delete(new Delete(b("r")));
      assertTrue(t.get(new Get(b("r"))).isEmpty());
    }
  }

  @Test
  void deleting_a_family_keeps_the_other_family() throws Exception {
    try (Table t = conn.getTable(createTable("delfam"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("1")).addColumn(CF2, Q, b("2")));
      t.delete(new Delete(b("r")).addFamily(CF));
      Result r = t.get(new Get(b("r")));
      assertNull(r.getValue(CF, Q));
      assertEquals("2", s(r.getValue(CF2, Q)));
    }
  }

  @Test
  void delete_column_removes_only_the_latest_version() throws Exception {
    try (Table t = conn.getTable(createTable("delcol"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 1L, b("old")));
      t.put(new Put(b("r")).addColumn(CF, Q, 2L, b("new")));
      t.delete(new Delete(b("r")).addColumn(CF, Q));
      assertEquals("old", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void delete_columns_removes_every_version() throws Exception {
    try (Table t = conn.getTable(createTable("delcols"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 1L, b("old")));
      t.put(new Put(b("r")).addColumn(CF, Q, 2L, b("new")));
      t.put(new Put(b("r")).addColumn(CF, b("other"), b("keep")));
      t.delete(new Delete(b("r")).addColumns(CF, Q));
      Result r = t.get(new Get(b("r")).readAllVersions());
      assertNull(r.getValue(CF, Q));
      assertEquals("keep", s(r.getValue(CF, b("other"))));
    }
  }

  @Test
  void delete_column_at_a_timestamp_removes_that_version_only() throws Exception {
    try (Table t = conn.getTable(createTable("delver"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 1L, b("one")));
      t.put(new Put(b("r")).addColumn(CF, Q, 2L, b("two")));
      t.put(new Put(b("r")).addColumn(CF, Q, 3L, b("three")));
      t.delete(new Delete(b("r")).addColumn(CF, Q, 2L));
      List<Cell> cells = t.get(new Get(b("r")).readAllVersions()).getColumnCells(CF, Q);
      assertEquals(2, cells.size());
      assertEquals(3L, cells.get(0).getTimestamp());
      assertEquals(1L, cells.get(1).getTimestamp());
    }
  }

  @Test
  void delete_columns_up_to_a_timestamp_keeps_newer_versions() throws Exception {
    try (Table t = conn.getTable(createTable("delupto"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 1L, b("one")));
      t.put(new Put(b("r")).addColumn(CF, Q, 2L, b("two")));
      t.put(new Put(b("r")).addColumn(CF, Q, 3L, b("three")));
      t.delete(new Delete(b("r")).addColumns(CF, Q, 2L));
      List<Cell> cells = t.get(new Get(b("r")).readAllVersions()).getColumnCells(CF, Q);
      assertEquals(1, cells.size());
      assertEquals(3L, cells.get(0).getTimestamp());
    }
  }

  @Test
  void delete_family_version_removes_cells_at_exactly_that_timestamp() throws Exception {
    try (Table t = conn.getTable(createTable("delfamver"))) {
      t.put(new Put(b("r")).addColumn(CF, b("a"), 5L, b("a5")).addColumn(CF, b("b"), 5L, b("b5")));
      t.put(new Put(b("r")).addColumn(CF, b("a"), 6L, b("a6")));
      t.delete(new Delete(b("r")).addFamilyVersion(CF, 5L));
      Result r = t.get(new Get(b("r")).readAllVersions());
      assertEquals(1, r.size());
      assertEquals("a6", s(r.getValue(CF, b("a"))));
    }
  }

  @Test
  void many_deletes_apply_together() throws Exception {
    try (Table t = conn.getTable(createTable("multidel"))) {
      for (int i = 0; i < 5; i++) {
        t.put(new Put(b("r" + i)).addColumn(CF, Q, b("v")));
      }
      List<Delete> deletes = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        deletes.add(new Delete(b("r" + i)));
      }
      t.delete(deletes);
      assertFalse(t.exists(new Get(b("r0"))));
      assertFalse(t.exists(new Get(b("r2"))));
      assertTrue(t.exists(new Get(b("r3"))));
    }
  }

  @Test
  void a_put_after_a_delete_at_a_later_time_is_visible() throws Exception {
    try (Table t = conn.getTable(createTable("putafter"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("first")));
      t.delete(new Delete(b("r")));
      t.put(new Put(b("r")).addColumn(CF, Q, b("second")));
      assertEquals("second", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void per_cell_ttl_on_a_put_expires_the_cell() throws Exception {
    try (Table t = conn.getTable(createTable("ttl"))) {
      t.put(new Put(b("r")).addColumn(CF, b("short"), b("gone")).setTTL(500));
      t.put(new Put(b("r")).addColumn(CF, b("long"), b("stays")));
      assertEquals("gone", s(t.get(new Get(b("r"))).getValue(CF, b("short"))));
      Thread.sleep(1500);
      Result r = t.get(new Get(b("r")));
      assertNull(r.getValue(CF, b("short")));
      assertEquals("stays", s(r.getValue(CF, b("long"))));
    }
  }

  @Test
  void per_cell_ttl_on_an_expired_version_shows_the_older_one_again() throws Exception {
    try (Table t = conn.getTable(createTable("ttlv"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, 1000L, b("old")));
      t.put(new Put(b("r")).addColumn(CF, Q, b("brief")).setTTL(300));
      Thread.sleep(1000);
      assertEquals("old", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void increment_adds_and_answers_the_new_value() throws Exception {
    try (Table t = conn.getTable(createTable("incr"))) {
      Result r1 = t.increment(new Increment(b("r")).addColumn(CF, Q, 5));
      assertEquals(5L, Bytes.toLong(r1.getValue(CF, Q)));
      Result r2 = t.increment(new Increment(b("r")).addColumn(CF, Q, -2));
      assertEquals(3L, Bytes.toLong(r2.getValue(CF, Q)));
    }
  }

  @Test
  void increment_column_value_answers_the_sum() throws Exception {
    try (Table t = conn.getTable(createTable("icv"))) {
      assertEquals(10L, t.incrementColumnValue(b("r"), CF, Q, 10));
      assertEquals(15L, t.incrementColumnValue(b("r"), CF, Q, 5));
      assertEquals(15L, Bytes.toLong(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void an_increment_of_several_columns_answers_each() throws Exception {
    try (Table t = conn.getTable(createTable("incrmany"))) {
      Result r = t.increment(new Increment(b("r")).addColumn(CF, b("a"), 1).addColumn(CF2, b("b"), 2));
      assertEquals(1L, Bytes.toLong(r.getValue(CF, b("a"))));
      assertEquals(2L, Bytes.toLong(r.getValue(CF2, b("b"))));
    }
  }

  @Test
  void incrementing_a_non_counter_value_is_refused() throws Exception {
    try (Table t = conn.getTable(createTable("incrbad"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("abc")));
      assertThrows(Exception.class, () -> t.increment(new Increment(b("r")).addColumn(CF, Q, 1)));
      assertEquals("abc", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void append_concatenates_and_answers_the_result() throws Exception {
    try (Table t = conn.getTable(createTable("append"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("abc")));
      Result r = t.append(new Append(b("r")).addColumn(CF, Q, b("def")));
      assertEquals("abcdef", s(r.getValue(CF, Q)));
      assertEquals("abcdef", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void append_to_a_missing_cell_creates_it() throws Exception {
    try (Table t = conn.getTable(createTable("appendnew"))) {
      t.append(new Append(b("r")).addColumn(CF, Q, b("x")));
      assertEquals("x", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void check_and_mutate_with_a_matching_value_applies_the_put() throws Exception {
    try (Table t = conn.getTable(createTable("cam"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("old")));
      CheckAndMutateResult res = t.checkAndMutate(CheckAndMutate.newBuilder(b("r"))
          .ifEquals(CF, Q, b("old")).build(new Put(b("r")).addColumn(CF, Q, b("new"))));
      assertTrue(res.isSuccess());
      assertEquals("new", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void check_and_mutate_with_a_wrong_value_changes_nothing() throws Exception {
    try (Table t = conn.getTable(createTable("camno"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("old")));
      CheckAndMutateResult res = t.checkAndMutate(CheckAndMutate.newBuilder(b("r"))
          .ifEquals(CF, Q, b("other")).build(new Put(b("r")).addColumn(CF, Q, b("new"))));
      assertFalse(res.isSuccess());
      assertEquals("old", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void check_and_mutate_if_not_exists_puts_only_once() throws Exception {
    try (Table t = conn.getTable(createTable("camabs"))) {
      CheckAndMutate cm = CheckAndMutate.newBuilder(b("r")).ifNotExists(CF, Q)
          .build(new Put(b("r")).addColumn(CF, Q, b("first")));
      assertTrue(t.checkAndMutate(cm).isSuccess());
      CheckAndMutate again = CheckAndMutate.newBuilder(b("r")).ifNotExists(CF, Q)
          .build(new Put(b("r")).addColumn(CF, Q, b("second")));
      assertFalse(t.checkAndMutate(again).isSuccess());
      assertEquals("first", s(t.get(new Get(b("r"))).getValue(CF, Q)));
    }
  }

  @Test
  void check_and_mutate_with_a_compare_op_follows_hbase_operand_order() throws Exception {
    try (Table t = conn.getTable(createTable("camop"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("5")));
      // HBase compares the given value against the stored one: "3" < "5" holds for LESS.
      CheckAndMutate cm = CheckAndMutate.newBuilder(b("r"))
          .ifMatches(CF, Q, CompareOperator.LESS, b("3"))
          .build(new Put(b("r")).addColumn(CF, b("hit"), b("yes")));
      assertTrue(t.checkAndMutate(cm).isSuccess());
      CheckAndMutate miss = CheckAndMutate.newBuilder(b("r"))
          .ifMatches(CF, Q, CompareOperator.GREATER, b("3"))
          .build(new Put(b("r")).addColumn(CF, b("miss"), b("yes")));
      assertFalse(t.checkAndMutate(miss).isSuccess());
      Result r = t.get(new Get(b("r")));
      assertEquals("yes", s(r.getValue(CF, b("hit"))));
      assertNull(r.getValue(CF, b("miss")));
    }
  }

  @Test
  void check_and_mutate_can_guard_a_delete() throws Exception {
    try (Table t = conn.getTable(createTable("camdel"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("v")));
      assertTrue(t.checkAndMutate(CheckAndMutate.newBuilder(b("r")).ifEquals(CF, Q, b("v"))
          .build(new Delete(b("r")))).isSuccess());
      assertFalse(t.exists(new Get(b("r"))));
    }
  }

  @Test
  void check_and_mutate_with_a_filter_condition() throws Exception {
    try (Table t = conn.getTable(createTable("camfilter"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("a")));
      CheckAndMutate cm = CheckAndMutate.newBuilder(b("r"))
          .ifMatches(new SingleColumnValueFilter(CF, Q, CompareOperator.EQUAL, b("a")))
          .build(new Put(b("r")).addColumn(CF, b("x"), b("1")));
      assertTrue(t.checkAndMutate(cm).isSuccess());
      CheckAndMutate no = CheckAndMutate.newBuilder(b("r"))
          .ifMatches(new SingleColumnValueFilter(CF, Q, CompareOperator.EQUAL, b("zz")))
          .build(new Put(b("r")).addColumn(CF, b("y"), b("1")));
      assertFalse(t.checkAndMutate(no).isSuccess());
      Result r = t.get(new Get(b("r")));
      assertEquals("1", s(r.getValue(CF, b("x"))));
      assertNull(r.getValue(CF, b("y")));
    }
  }

  @Test
  void check_and_mutate_can_guard_row_mutations() throws Exception {
    try (Table t = conn.getTable(createTable("camrm"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("v")).addColumn(CF, b("gone"), b("x")));
      RowMutations rm = new RowMutations(b("r"))
          .add((Mutation) new Put(b("r")).addColumn(CF, b("new"), b("n")))
          .add((Mutation) new Delete(b("r")).addColumns(CF, b("gone")));
      assertTrue(t.checkAndMutate(CheckAndMutate.newBuilder(b("r")).ifEquals(CF, Q, b("v")).build(rm))
          .isSuccess());
      Result r = t.get(new Get(b("r")));
      assertEquals("n", s(r.getValue(CF, b("new"))));
      assertNull(r.getValue(CF, b("gone")));
    }
  }

  @Test
  void mutate_row_applies_puts_and_deletes_atomically() throws Exception {
    try (Table t = conn.getTable(createTable("mutrow"))) {
      t.put(new Put(b("r")).addColumn(CF, b("old"), b("x")));
      t.mutateRow(new RowMutations(b("r"))
          .add((Mutation) new Put(b("r")).addColumn(CF, b("new"), b("y")))
          .add((Mutation) new Delete(b("r")).addColumns(CF, b("old"))));
      Result r = t.get(new Get(b("r")));
      assertEquals(1, r.size());
      assertEquals("y", s(r.getValue(CF, b("new"))));
    }
  }

  @Test
  void row_mutations_with_increment_and_append_answer_their_results() throws Exception {
    try (Table t = conn.getTable(createTable("rmia"))) {
      t.put(new Put(b("r")).addColumn(CF, b("s"), b("ab")));
      Result res = t.mutateRow(new RowMutations(b("r"))
          .add((Mutation) new Put(b("r")).addColumn(CF, b("p"), b("v")))
          .add((Mutation) new Increment(b("r")).addColumn(CF, b("c"), 7))
          .add((Mutation) new Append(b("r")).addColumn(CF, b("s"), b("cd"))));
      assertEquals(7L, Bytes.toLong(res.getValue(CF, b("c"))));
      assertEquals("abcd", s(res.getValue(CF, b("s"))));
      Result r = t.get(new Get(b("r")));
      assertEquals("v", s(r.getValue(CF, b("p"))));
    }
  }

  @Test
  void check_and_mutate_of_an_increment_answers_the_new_value_when_it_applies() throws Exception {
    try (Table t = conn.getTable(createTable("camInc"))) {
      t.put(new Put(b("r")).addColumn(CF, b("c"), Bytes.toBytes(5L)));
      CheckAndMutateResult applied = t.checkAndMutate(CheckAndMutate.newBuilder(b("r"))
          .ifNotExists(CF, b("guard"))
          .build(new Increment(b("r")).addColumn(CF, b("c"), 3)));
      assertTrue(applied.isSuccess());
      assertEquals(8L, Bytes.toLong(applied.getResult().getValue(CF, b("c"))));
      t.put(new Put(b("r")).addColumn(CF, b("guard"), b("x")));
      CheckAndMutateResult refused = t.checkAndMutate(CheckAndMutate.newBuilder(b("r"))
          .ifNotExists(CF, b("guard"))
          .build(new Increment(b("r")).addColumn(CF, b("c"), 3)));
      assertFalse(refused.isSuccess());
      assertEquals(8L, Bytes.toLong(t.get(new Get(b("r"))).getValue(CF, b("c"))));
    }
  }

  @Test
  void a_put_to_an_unknown_family_is_refused() throws Exception {
    try (Table t = conn.getTable(createTable("nofam"))) {
      assertThrows(Exception.class,
          () -> t.put(new Put(b("r")).addColumn(b("nosuch"), Q, b("v"))));
    }
  }

  @Test
  void a_get_of_a_missing_table_is_refused() throws Exception {
    TableName name = TableName.valueOf("jc_never_created_" + System.nanoTime());
    try (Table t = conn.getTable(name)) {
      assertThrows(Exception.class, () -> t.get(new Get(b("r"))));
    }
  }

  @Test
  void empty_values_round_trip() throws Exception {
    try (Table t = conn.getTable(createTable("empty"))) {
      t.put(new Put(b("r")).addColumn(CF, Q, new byte[0]));
      Result r = t.get(new Get(b("r")));
      assertTrue(r.containsColumn(CF, Q));
      assertEquals(0, r.getValue(CF, Q).length);
    }
  }

  @Test
  void binary_row_keys_and_values_round_trip() throws Exception {
    try (Table t = conn.getTable(createTable("binary"))) {
      byte[] row = {0, (byte) 0xff, 1, (byte) 0x80};
      byte[] value = {(byte) 0xfe, 0, 0, 7};
      t.put(new Put(row).addColumn(CF, new byte[] {0, 1}, value));
      assertArrayEquals(value, t.get(new Get(row)).getValue(CF, new byte[] {0, 1}));
    }
  }

  @Test
  void cells_come_back_sorted_by_family_and_qualifier() throws Exception {
    try (Table t = conn.getTable(createTable("order"))) {
      t.put(new Put(b("r")).addColumn(CF2, b("a"), b("1")).addColumn(CF, b("z"), b("2"))
          .addColumn(CF, b("b"), b("3")));
      Cell[] cells = t.get(new Get(b("r"))).rawCells();
      assertEquals(3, cells.length);
      assertEquals("b", Bytes.toString(CellUtil.cloneQualifier(cells[0])));
      assertEquals("z", Bytes.toString(CellUtil.cloneQualifier(cells[1])));
      assertEquals("cf2", Bytes.toString(CellUtil.cloneFamily(cells[2])));
    }
  }
}
