package dev.basalt.diff;

import org.apache.hadoop.hbase.filter.FilterBase;

/**
 * A filter class no server has: sending it is the "bad filter" mistake whose error class both
 * servers must agree on.
 */
public final class UnknownFilter extends FilterBase {
  @Override
  public byte[] toByteArray() {
    return new byte[] {1, 2, 3};
  }

  /** HBase's servers look this method up by reflection to read a filter. */
  public static UnknownFilter parseFrom(byte[] bytes) {
    return new UnknownFilter();
  }
}
