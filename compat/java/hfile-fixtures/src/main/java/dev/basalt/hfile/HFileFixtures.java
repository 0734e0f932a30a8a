package dev.basalt.hfile;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.ArrayBackedTag;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellComparatorImpl;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.PrivateCellUtil;
import org.apache.hadoop.hbase.Tag;
import org.apache.hadoop.hbase.io.compress.Compression;
import org.apache.hadoop.hbase.io.encoding.DataBlockEncoding;
import org.apache.hadoop.hbase.io.hfile.CacheConfig;
import org.apache.hadoop.hbase.io.hfile.HFile;
import org.apache.hadoop.hbase.io.hfile.HFileContext;
import org.apache.hadoop.hbase.io.hfile.HFileContextBuilder;
import org.apache.hadoop.hbase.io.hfile.HFileScanner;
import org.apache.hadoop.hbase.regionserver.BloomType;
import org.apache.hadoop.hbase.regionserver.StoreFileWriter;
import org.apache.hadoop.hbase.util.ChecksumType;

/**
 * Writes the HFile fixtures of crates/basalt-hfile with HBase's own store-file writer
 * (StoreFileWriter over HFileWriterImpl, what a region server's flush and compactions use),
 * then reads each file back with HBase's own reader and writes what it found as
 * FIXTURE.expected.json beside it: the cells in file order, and the settings the file was
 * written with.
 *
 * <p>Usage: HFileFixtures OUT_DIR. The cells are deterministic (a fixed-seed generator), and so
 * are the files except for nothing: the create time is fixed too.
 */
public final class HFileFixtures {
  private static final byte[] FAMILY = bytes("cf");
  private static final long CREATE_TIME = 1_700_000_000_000L;

  /** One fixture: how its file is written. */
  private static final class Spec {
    final String name;
    final DataBlockEncoding encoding;
    final Compression.Algorithm compression;
    ChecksumType checksum = ChecksumType.CRC32C;
    int bytesPerChecksum = 16 * 1024;
    int blockSize = 1024;
    int rows = 9;
    BloomType bloom = BloomType.ROW;
    boolean tags = true;
    boolean compressTags = true;
    int indexBlockMaxSize = 128 * 1024;
    int indexMinEntries = 16;
    int bloomBlockSize = 128 * 1024;

    Spec(String name, DataBlockEncoding encoding, Compression.Algorithm compression) {
      this.name = name;
      this.encoding = encoding;
      this.compression = compression;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: HFileFixtures OUT_DIR");
      System.exit(2);
    }
    java.nio.file.Path out = Paths.get(args[0]);
    Files.createDirectories(out);

    List<Spec> specs = new ArrayList<>();
    // Each data block encoding, uncompressed.
    specs.add(new Spec("none-none", DataBlockEncoding.NONE, Compression.Algorithm.NONE));
    specs.add(new Spec("prefix-none", DataBlockEncoding.PREFIX, Compression.Algorithm.NONE));
    specs.add(new Spec("diff-none", DataBlockEncoding.DIFF, Compression.Algorithm.NONE));
    specs.add(new Spec("fastdiff-none", DataBlockEncoding.FAST_DIFF, Compression.Algorithm.NONE));
    specs.add(
        new Spec("rowindex-none", DataBlockEncoding.ROW_INDEX_V1, Compression.Algorithm.NONE));
    // Each compression, with an encoding beside it.
    specs.add(new Spec("none-gz", DataBlockEncoding.NONE, Compression.Algorithm.GZ));
    specs.add(new Spec("prefix-snappy", DataBlockEncoding.PREFIX, Compression.Algorithm.SNAPPY));
    specs.add(new Spec("fastdiff-lz4", DataBlockEncoding.FAST_DIFF, Compression.Algorithm.LZ4));
    // No ZSTD: HBase's codec for it (Hadoop's ZStandardCodec) needs libhadoop, and HBase's own
    // pure-Java codecs (hbase-compression-*) are not served for 2.6.x here.
    specs.add(new Spec("diff-snappy", DataBlockEncoding.DIFF, Compression.Algorithm.SNAPPY));
    specs.add(
        new Spec("rowindex-gz", DataBlockEncoding.ROW_INDEX_V1, Compression.Algorithm.GZ));
    // CRC32 checksums in small chunks, a row+column bloom, tags not compressed.
    Spec crc = new Spec("crc32-rowcol", DataBlockEncoding.FAST_DIFF, Compression.Algorithm.NONE);
    crc.checksum = ChecksumType.CRC32;
    crc.bytesPerChecksum = 512;
    crc.bloom = BloomType.ROWCOL;
    crc.compressTags = false;
    specs.add(crc);
    // No tags in the file at all (HFile v2-style cells in a v3 file), no bloom.
    Spec notags = new Spec("notags-nobloom", DataBlockEncoding.NONE, Compression.Algorithm.NONE);
    notags.tags = false;
    notags.bloom = BloomType.NONE;
    specs.add(notags);
    // Many small blocks: a three-level data index, several bloom chunks.
    Spec multi = new Spec("multilevel", DataBlockEncoding.NONE, Compression.Algorithm.NONE);
    multi.blockSize = 128;
    multi.rows = 24;
    multi.indexBlockMaxSize = 128;
    multi.indexMinEntries = 4;
    multi.bloomBlockSize = 16;
    specs.add(multi);
    Spec multiEnc =
        new Spec("multilevel-fastdiff-snappy", DataBlockEncoding.FAST_DIFF,
            Compression.Algorithm.SNAPPY);
    multiEnc.blockSize = 256;
    multiEnc.rows = 24;
    multiEnc.indexBlockMaxSize = 128;
    multiEnc.indexMinEntries = 3;
    specs.add(multiEnc);

    for (Spec spec : specs) {
      write(out, spec);
    }
  }

  private static void write(java.nio.file.Path outDir, Spec spec) throws IOException {
    Configuration conf = HBaseConfiguration.create();
    conf.setInt("hfile.index.block.max.size", spec.indexBlockMaxSize);
    conf.setInt("hfile.index.block.min.entries", spec.indexMinEntries);
    conf.setInt("io.storefile.bloom.block.size", spec.bloomBlockSize);
    conf.setInt("hfile.format.version", 3);
    FileSystem fs = FileSystem.getLocal(conf).getRawFileSystem();

    HFileContext context =
        new HFileContextBuilder()
            .withIncludesMvcc(true)
            .withIncludesTags(spec.tags)
            .withCompression(spec.compression)
            .withCompressTags(spec.compressTags)
            .withChecksumType(spec.checksum)
            .withBytesPerCheckSum(spec.bytesPerChecksum)
            .withBlockSize(spec.blockSize)
            .withDataBlockEncoding(spec.encoding)
            .withCellComparator(CellComparatorImpl.COMPARATOR)
            .withColumnFamily(FAMILY)
            .withTableName(bytes("fixtures"))
            .withCreateTime(CREATE_TIME)
            .build();

    Path path = new Path(outDir.toAbsolutePath().toString(), spec.name + ".hfile");
    fs.delete(path, false);
    List<KeyValue> cells = cells(spec);
    long maxSeq = 0;
    StoreFileWriter writer =
        new StoreFileWriter.Builder(conf, CacheConfig.DISABLED, fs)
            .withFilePath(path)
            .withBloomType(spec.bloom)
            .withMaxKeyCount(cells.size())
            .withFileContext(context)
            .build();
    for (KeyValue kv : cells) {
      writer.append(kv);
      maxSeq = Math.max(maxSeq, kv.getSequenceId());
    }
    writer.appendMetadata(maxSeq, false);
    writer.close();

    // Read it back with HBase's reader: the listing is what HBase itself sees in the file.
    List<Cell> read = new ArrayList<>();
    HFile.Reader reader = HFile.createReader(fs, path, CacheConfig.DISABLED, true, conf);
    HFileScanner scanner = reader.getScanner(conf, false, false);
    if (scanner.seekTo()) {
      do {
        read.add(scanner.getCell());
      } while (scanner.next());
    }
    if (read.size() != cells.size()) {
      throw new IllegalStateException(
          spec.name + ": wrote " + cells.size() + " cells, HBase read " + read.size());
    }
    for (int i = 0; i < cells.size(); i++) {
      if (!CellUtil.equals(cells.get(i), read.get(i))
          || !Arrays.equals(CellUtil.cloneValue(cells.get(i)), CellUtil.cloneValue(read.get(i)))) {
        throw new IllegalStateException(spec.name + ": cell " + i + " differs on reading back");
      }
    }

    try (Writer w =
        Files.newBufferedWriter(outDir.resolve(spec.name + ".expected.json"),
            StandardCharsets.UTF_8)) {
      w.write("{\n");
      w.write("  \"file\": \"" + spec.name + ".hfile\",\n");
      w.write("  \"data_block_encoding\": \"" + spec.encoding.name() + "\",\n");
      w.write("  \"compression\": \"" + spec.compression.name() + "\",\n");
      w.write("  \"checksum\": \"" + spec.checksum.name() + "\",\n");
      w.write("  \"bytes_per_checksum\": " + spec.bytesPerChecksum + ",\n");
      w.write("  \"bloom\": \"" + spec.bloom.name() + "\",\n");
      w.write("  \"includes_tags\": " + spec.tags + ",\n");
      w.write("  \"tags_compressed\": "
          + (spec.tags && spec.compressTags && spec.encoding != DataBlockEncoding.NONE) + ",\n");
      w.write("  \"data_index_levels\": " + reader.getTrailer().getNumDataIndexLevels() + ",\n");
      w.write("  \"entry_count\": " + reader.getEntries() + ",\n");
      w.write("  \"max_seq_id\": " + maxSeq + ",\n");
      w.write("  \"cells\": [\n");
      for (int i = 0; i < read.size(); i++) {
        Cell c = read.get(i);
        w.write("    {\"row\": \"" + binary(CellUtil.cloneRow(c)) + "\", \"family\": \""
            + binary(CellUtil.cloneFamily(c)) + "\", \"qualifier\": \""
            + binary(CellUtil.cloneQualifier(c)) + "\", \"timestamp\": " + c.getTimestamp()
            + ", \"type\": \"" + KeyValue.Type.codeToType(c.getTypeByte()).name()
            + "\", \"seq_id\": " + c.getSequenceId() + ", \"value\": \""
            + binary(CellUtil.cloneValue(c)) + "\", \"tags\": [");
        List<Tag> tags = PrivateCellUtil.getTags(c);
        for (int t = 0; t < tags.size(); t++) {
          w.write((t > 0 ? ", " : "") + "{\"type\": " + (tags.get(t).getType() & 0xff)
              + ", \"value\": \"" + binary(Tag.cloneValue(tags.get(t))) + "\"}");
        }
        w.write("]}" + (i + 1 < read.size() ? "," : "") + "\n");
      }
      w.write("  ]\n}\n");
    }
    reader.close();
    System.out.println(spec.name + ": " + cells.size() + " cells, "
        + Files.size(outDir.resolve(spec.name + ".hfile")) + " bytes");
  }

  /** The cells of a fixture, sorted as HBase sorts them. */
  private static List<KeyValue> cells(Spec spec) {
    java.util.Random random = new java.util.Random(42);
    List<KeyValue> cells = new ArrayList<>();
    long seq = 1;
    byte[][] qualifiers = {bytes(""), bytes("a"), bytes("b"), bytes("name"),
        bytes("qualifier-with-a-longer-name")};
    for (int r = 0; r < spec.rows; r++) {
      byte[] row;
      if (r % 17 == 5) {
        // Binary row keys: zero bytes, high bytes.
        row = new byte[] {'r', 0, (byte) 0xff, (byte) r, (byte) (r >> 8), (byte) 0x80};
      } else {
        row = bytes(String.format("row-%05d", r));
      }
      for (int qi = 0; qi < qualifiers.length; qi++) {
        byte[] q = qualifiers[qi];
        if (random.nextInt(3) == 0 && q.length > 0) {
          continue;
        }
        int versions = 1 + random.nextInt(3);
        for (int v = 0; v < versions; v++) {
          long ts = 1_000_000L + 1000L * v + random.nextInt(100);
          byte[] value = value(random, r, v, qi);
          List<Tag> tags = new ArrayList<>();
          if (spec.tags && random.nextInt(4) == 0) {
            tags.add(new ArrayBackedTag((byte) 8, new byte[] {0, 0, 0, 0, 0, 0, 0x27, 0x10}));
            if (random.nextBoolean()) {
              tags.add(new ArrayBackedTag((byte) 65, bytes("owner-" + (r % 3))));
            }
          }
          cells.add(kv(row, q, ts, KeyValue.Type.Put, value, tags, seq++));
        }
      }
      // Delete markers of each type on some rows.
      switch (r % 7) {
        case 1:
          cells.add(kv(row, bytes(""), 1_000_500L, KeyValue.Type.DeleteFamily, new byte[0],
              List.of(), seq++));
          break;
        case 2:
          cells.add(kv(row, bytes("a"), 1_000_050L, KeyValue.Type.DeleteColumn, new byte[0],
              List.of(), seq++));
          break;
        case 3:
          cells.add(kv(row, bytes("b"), 1_001_010L, KeyValue.Type.Delete, new byte[0],
              List.of(), seq++));
          break;
        case 4:
          cells.add(kv(row, bytes(""), 1_002_020L, KeyValue.Type.DeleteFamilyVersion,
              new byte[0], List.of(), seq++));
          break;
        default:
          break;
      }
    }
    cells.sort(CellComparatorImpl.COMPARATOR);
    return cells;
  }

  private static KeyValue kv(byte[] row, byte[] qualifier, long ts, KeyValue.Type type,
      byte[] value, List<Tag> tags, long seq) {
    KeyValue kv = new KeyValue(row, FAMILY, qualifier, ts, type, value, tags);
    kv.setSequenceId(seq);
    return kv;
  }

  private static byte[] value(java.util.Random random, int r, int v, int qi) {
    int kind = random.nextInt(10);
    if (kind == 0) {
      return new byte[0];
    }
    if (r == 7 && v == 0 && qi == 3) {
      // Larger than a data block.
      byte[] big = new byte[1500];
      for (int i = 0; i < big.length; i++) {
        big[i] = (byte) "0123456789abcdef".charAt((i * 7) % 16);
      }
      return big;
    }
    if (kind < 4) {
      byte[] b = new byte[1 + random.nextInt(24)];
      random.nextBytes(b);
      return b;
    }
    return bytes("value-" + r + "-" + v);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Bytes as a JSON string's content: printable ASCII as itself, except backslash and double
   * quote; every other byte as a backslash (escaped for JSON), x and two lowercase hex digits.
   */
  private static String binary(byte[] b) {
    StringBuilder sb = new StringBuilder(b.length);
    for (byte x : b) {
      int c = x & 0xff;
      if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
        sb.append((char) c);
      } else {
        sb.append("\\\\x").append(Character.forDigit(c >> 4, 16))
            .append(Character.forDigit(c & 0xf, 16));
      }
    }
    return sb.toString();
  }

  private HFileFixtures() {}
}
