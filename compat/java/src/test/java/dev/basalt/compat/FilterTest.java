package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.filter.*;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.Pair;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

/** Server-side filters, each checked against the rows HBase 2.6 returns. */
class FilterTest extends CompatBase {

  /** Rows row00..row19; cf:q = "v<i>", cf:n = i as text, cf:a..cf:e, cf2:q. */
  private Table data(String what) throws IOException {
    Table t = conn.getTable(createTable(what));
    List<Put> puts = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      Put p = new Put(b(String.format("row%02d", i)))
          .addColumn(CF, Q, 100L, b("v" + i))
          .addColumn(CF, b("n"), 100L, b(String.valueOf(i % 3)))
          .addColumn(CF2, Q, 200L, b("w" + i));
      for (String c : new String[] {"a", "ab", "b", "c", "d"}) {
        p.addColumn(CF, b(c), 100L, b(c));
      }
      puts.add(p);
    }
    t.put(puts);
    return t;
  }

  private List<String> rows(Table t, Filter f) throws IOException {
    return ScanTest.rows(t, new Scan().setFilter(f));
  }

  @Test
  void single_column_value_filter_keeps_matching_rows() throws Exception {
    try (Table t = data("scvf")) {
      assertEquals(List.of("row05"),
          rows(t, new SingleColumnValueFilter(CF, Q, CompareOperator.EQUAL, b("v5"))));
    }
  }

  @Test
  void single_column_value_filter_without_the_column_keeps_the_row_unless_told() throws Exception {
    try (Table t = data("scvfmissing")) {
      t.put(new Put(b("zzz")).addColumn(CF2, Q, b("only")));
      SingleColumnValueFilter f = new SingleColumnValueFilter(CF, Q, CompareOperator.EQUAL, b("v1"));
      assertEquals(List.of("row01", "zzz"), rows(t, f));
      SingleColumnValueFilter strict = new SingleColumnValueFilter(CF, Q, CompareOperator.EQUAL, b("v1"));
      strict.setFilterIfMissing(true);
      assertEquals(List.of("row01"), rows(t, strict));
    }
  }

  @Test
  void single_column_value_filter_with_a_substring_comparator() throws Exception {
    try (Table t = data("scvfsub")) {
      assertEquals(List.of("row01", "row10", "row11", "row12", "row13", "row14", "row15",
              "row16", "row17", "row18", "row19"),
          rows(t, new SingleColumnValueFilter(CF, Q, CompareOperator.EQUAL,
              new SubstringComparator("v1"))));
    }
  }

  @Test
  void prefix_filter_keeps_rows_with_the_prefix() throws Exception {
    try (Table t = data("prefix")) {
      List<String> rows = rows(t, new PrefixFilter(b("row1")));
      assertEquals(10, rows.size());
      assertEquals("row10", rows.get(0));
    }
  }

  @Test
  void row_filter_with_a_regex() throws Exception {
    try (Table t = data("rowregex")) {
      assertEquals(List.of("row03", "row13"),
          rows(t, new RowFilter(CompareOperator.EQUAL, new RegexStringComparator("row.3"))));
    }
  }

  @Test
  void row_filter_with_a_substring() throws Exception {
    try (Table t = data("rowsub")) {
      assertEquals(List.of("row07", "row17"),
          rows(t, new RowFilter(CompareOperator.EQUAL, new SubstringComparator("7"))));
    }
  }

  @Test
  void row_filter_with_a_binary_comparison() throws Exception {
    try (Table t = data("rowbin")) {
      assertEquals(List.of("row18", "row19"),
          rows(t, new RowFilter(CompareOperator.GREATER, new BinaryComparator(b("row17")))));
    }
  }

  @Test
  void filter_list_must_pass_all() throws Exception {
    try (Table t = data("andlist")) {
      FilterList f = new FilterList(FilterList.Operator.MUST_PASS_ALL,
          new PrefixFilter(b("row1")),
          new SingleColumnValueFilter(CF, b("n"), CompareOperator.EQUAL, b("0")));
      assertEquals(List.of("row12", "row15", "row18"), rows(t, f));
    }
  }

  @Test
  void filter_list_must_pass_one() throws Exception {
    try (Table t = data("orlist")) {
      FilterList f = new FilterList(FilterList.Operator.MUST_PASS_ONE,
          new RowFilter(CompareOperator.EQUAL, new BinaryComparator(b("row02"))),
          new RowFilter(CompareOperator.EQUAL, new BinaryComparator(b("row04"))));
      assertEquals(List.of("row02", "row04"), rows(t, f));
    }
  }

  @Test
  void an_or_list_nested_in_an_and_list() throws Exception {
    try (Table t = data("nested1")) {
      FilterList or = new FilterList(FilterList.Operator.MUST_PASS_ONE,
          new PrefixFilter(b("row0")), new PrefixFilter(b("row19")));
      FilterList and = new FilterList(FilterList.Operator.MUST_PASS_ALL, or,
          new SingleColumnValueFilter(CF, b("n"), CompareOperator.EQUAL, b("1")));
      assertEquals(List.of("row01", "row04", "row07", "row19"), rows(t, and));
    }
  }

  @Test
  void an_and_list_nested_in_an_or_list() throws Exception {
    try (Table t = data("nested2")) {
      FilterList and = new FilterList(FilterList.Operator.MUST_PASS_ALL,
          new PrefixFilter(b("row1")),
          new SingleColumnValueFilter(CF, b("n"), CompareOperator.EQUAL, b("2")));
      FilterList or = new FilterList(FilterList.Operator.MUST_PASS_ONE, and,
          new RowFilter(CompareOperator.EQUAL, new BinaryComparator(b("row00"))));
      assertEquals(List.of("row00", "row11", "row14", "row17"), rows(t, or));
    }
  }

  @Test
  void page_filter_limits_rows() throws Exception {
    try (Table t = data("page")) {
      assertEquals(List.of("row00", "row01", "row02", "row03"), rows(t, new PageFilter(4)));
    }
  }

  @Test
  void column_prefix_filter_keeps_matching_columns() throws Exception {
    try (Table t = data("colprefix")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(new ColumnPrefixFilter(b("a"))))) {
        Result r = rs.next();
        assertEquals(2, r.size());
        assertNotNull(r.getValue(CF, b("a")));
        assertNotNull(r.getValue(CF, b("ab")));
      }
    }
  }

  @Test
  void multiple_column_prefix_filter_keeps_each_prefix() throws Exception {
    try (Table t = data("multiprefix")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(
          new MultipleColumnPrefixFilter(new byte[][] {b("b"), b("d")})))) {
        Result r = rs.next();
        assertEquals(2, r.size());
        assertNotNull(r.getValue(CF, b("b")));
        assertNotNull(r.getValue(CF, b("d")));
      }
    }
  }

  @Test
  void column_range_filter_honours_inclusive_bounds() throws Exception {
    try (Table t = data("colrange")) {
      try (ResultScanner rs = t.getScanner(new Scan().addFamily(CF).setFilter(
          new ColumnRangeFilter(b("ab"), true, b("c"), false)))) {
        Result r = rs.next();
        assertEquals(2, r.size());
        assertNotNull(r.getValue(CF, b("ab")));
        assertNotNull(r.getValue(CF, b("b")));
      }
    }
  }

  @Test
  void key_only_filter_strips_values() throws Exception {
    try (Table t = data("keyonly")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(new KeyOnlyFilter()))) {
        Result r = rs.next();
        assertEquals(8, r.size());
        for (Cell c : r.rawCells()) {
          assertEquals(0, c.getValueLength());
        }
      }
    }
  }

  @Test
  void key_only_filter_with_lengths_answers_value_lengths() throws Exception {
    try (Table t = data("keylen")) {
      try (ResultScanner rs = t.getScanner(new Scan().addColumn(CF, Q).setFilter(new KeyOnlyFilter(true)))) {
        Result r = rs.next();
        assertEquals(2, Bytes.toInt(r.getValue(CF, Q)));
      }
    }
  }

  @Test
  void first_key_only_filter_returns_one_cell_per_row() throws Exception {
    try (Table t = data("firstkey")) {
      int rows = 0;
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(new FirstKeyOnlyFilter()))) {
        for (Result r : rs) {
          assertEquals(1, r.size());
          assertEquals("a", Bytes.toString(CellUtil.cloneQualifier(r.rawCells()[0])));
          rows++;
        }
      }
      assertEquals(20, rows);
    }
  }

  @Test
  void timestamps_filter_keeps_only_listed_timestamps() throws Exception {
    try (Table t = data("tsfilter")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(new TimestampsFilter(List.of(200L))))) {
        Result r = rs.next();
        assertEquals(1, r.size());
        assertEquals("w0", s(r.getValue(CF2, Q)));
      }
    }
  }

  @Test
  void dependent_column_filter_keeps_cells_at_the_reference_timestamp() throws Exception {
    try (Table t = conn.getTable(createTable("dependent"))) {
      t.put(new Put(b("r")).addColumn(CF, b("ref"), 5L, b("x")).addColumn(CF, b("a"), 5L, b("a5"))
          .addColumn(CF, b("b"), 6L, b("b6")));
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(
          new DependentColumnFilter(CF, b("ref"), true)))) {
        Result r = rs.next();
        assertEquals(1, r.size());
        assertEquals("a5", s(r.getValue(CF, b("a"))));
      }
    }
  }

  @Test
  void fuzzy_row_filter_matches_fixed_positions() throws Exception {
    try (Table t = data("fuzzy")) {
      // "row?5": positions 0-2 and 4 fixed (mask 0), position 3 free (mask 1).
      FuzzyRowFilter f = new FuzzyRowFilter(List.of(
          new Pair<>(b("row?5"), new byte[] {0, 0, 0, 1, 0})));
      assertEquals(List.of("row05", "row15"), rows(t, f));
    }
  }

  @Test
  void fuzzy_row_filter_with_several_patterns_in_a_reversed_scan() throws Exception {
    try (Table t = data("fuzzyrev")) {
      FuzzyRowFilter f = new FuzzyRowFilter(List.of(
          new Pair<>(b("row?3"), new byte[] {0, 0, 0, 1, 0}),
          new Pair<>(b("row1?"), new byte[] {0, 0, 0, 0, 1})));
      List<String> seen = new ArrayList<>();
      try (ResultScanner rs = t.getScanner(new Scan().setReversed(true).setFilter(f))) {
        for (Result r : rs) {
          seen.add(Bytes.toString(r.getRow()));
        }
      }
      assertEquals(List.of("row19", "row18", "row17", "row16", "row15", "row14", "row13",
          "row12", "row11", "row10", "row03"), seen);
    }
  }

  @Test
  void multi_row_range_filter_keeps_rows_in_any_range() throws Exception {
    try (Table t = data("mrr")) {
      MultiRowRangeFilter f = new MultiRowRangeFilter(Arrays.asList(
          new MultiRowRangeFilter.RowRange(b("row02"), true, b("row04"), false),
          new MultiRowRangeFilter.RowRange(b("row17"), false, b("row19"), true)));
      assertEquals(List.of("row02", "row03", "row18", "row19"), rows(t, f));
    }
  }

  @Test
  void value_filter_keeps_matching_cells() throws Exception {
    try (Table t = data("value")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(
          new ValueFilter(CompareOperator.EQUAL, new BinaryComparator(b("w3")))))) {
        Result r = rs.next();
        assertEquals("row03", Bytes.toString(r.getRow()));
        assertEquals(1, r.size());
        assertNull(rs.next());
      }
    }
  }

  @Test
  void qualifier_filter_keeps_matching_columns() throws Exception {
    try (Table t = data("qualifier")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(
          new QualifierFilter(CompareOperator.EQUAL, new BinaryComparator(b("c")))))) {
        Result r = rs.next();
        assertEquals(1, r.size());
        assertEquals("c", s(r.getValue(CF, b("c"))));
      }
    }
  }

  @Test
  void family_filter_keeps_the_matching_family() throws Exception {
    try (Table t = data("familyf")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(
          new FamilyFilter(CompareOperator.EQUAL, new BinaryComparator(CF2))))) {
        assertEquals(1, rs.next().size());
      }
    }
  }

  @Test
  void column_count_get_filter_limits_cells_per_row() throws Exception {
    try (Table t = data("colcount")) {
      try (ResultScanner rs = t.getScanner(new Scan().setFilter(new ColumnCountGetFilter(3)))) {
        assertEquals(3, rs.next().size());
      }
    }
  }

  @Test
  void inclusive_stop_filter_includes_the_stop_row() throws Exception {
    try (Table t = data("inclstop")) {
      assertEquals(List.of("row00", "row01", "row02"), rows(t, new InclusiveStopFilter(b("row02"))));
    }
  }

  @Test
  void a_filter_on_a_get_applies_to_the_row() throws Exception {
    try (Table t = data("getfilter")) {
      Result r = t.get(new Get(b("row01")).setFilter(new ColumnPrefixFilter(b("a"))));
      assertEquals(2, r.size());
    }
  }
}
