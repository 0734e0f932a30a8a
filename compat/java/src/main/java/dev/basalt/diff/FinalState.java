package dev.basalt.diff;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

/** The whole table at the end of a run: a raw scan of every version, markers included. */
final class FinalState {
  private FinalState() {}

  static Op op() {
    return new Op() {
      public String describe() {
        return "final state: raw scan of all versions";
      }

      public String apply(Table table, Admin admin, long base) throws Exception {
        List<Result> results = new ArrayList<>();
        Scan scan = new Scan().setRaw(true).readAllVersions();
        try (ResultScanner scanner = table.getScanner(scan)) {
          for (Result result : scanner) {
            results.add(result);
          }
        }
        return Answer.results(results, base);
      }
    };
  }
}
