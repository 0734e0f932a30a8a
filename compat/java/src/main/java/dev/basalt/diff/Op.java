package dev.basalt.diff;

import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

/** One generated operation, applied the same way to each server; its answer is canonical text. */
interface Op {
  /** What the operation is, for a mismatch report. */
  String describe();

  /** Runs the operation; returns its answer (errors are caught by the caller). */
  String apply(Table table, Admin admin, long base) throws Exception;

  /**
   * True when the operation's answer must not be compared: it read server-chosen state that two
   * servers cannot agree on (none of the generated operations today).
   */
  default boolean comparable() {
    return true;
  }

  /**
   * True when Basalt runs the operation only where the reference HBase did: a split HBase refuses
   * ("NOT splittable", as it does for a daughter until its compacted reference files are archived,
   * docs/hbase-semantics.md) is not run on Basalt either, so both keep the same regions.
   */
  default boolean followsReference() {
    return false;
  }

  /**
   * A raw read of every version of the rows the operation looked at (no compaction first), shown
   * beside a mismatch so the report says what each server held; null when there is none.
   */
  default Scan context() {
    return null;
  }
}
