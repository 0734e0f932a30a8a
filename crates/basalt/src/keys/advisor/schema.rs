//! Schema warnings: what HBase's guidance says about families, names and
//! versions, checked on a table descriptor, and what a sample of rows says
//! about their width. Warnings only: nothing here refuses a schema.

use std::collections::HashSet;

use basalt_types::TableDescriptor;

/// The warning thresholds. Defaults in [`SchemaLimits::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaLimits {
    /// More families than this is warned about: 3 (HBase's guidance is
    /// two or three at most: the families of a region flush together,
    /// and each is its own set of files).
    pub max_families: usize,
    /// Family names longer than this many bytes are warned about: 8.
    /// Every cell stores its family name, so beyond 8 bytes the name
    /// costs more per cell than the timestamp; HBase's own examples
    /// (`cf`, `colfam1`) stay below it, and one byte is best.
    pub max_family_name_bytes: usize,
    /// VERSIONS above this with no TTL is warned about: 100 (every
    /// overwrite is kept, so a row can grow without bound).
    pub max_versions_without_ttl: u32,
    /// Sampled qualifiers longer than this on average are warned about:
    /// 16 bytes (every cell stores its qualifier).
    pub max_mean_qualifier_bytes: f64,
    /// A sampled row with more cells than this is warned about: 100,000.
    pub max_cells_per_row: u64,
    /// Rows are warned about as growing without bound when the 99th
    /// percentile of cells per row is this many times the median: 10 ...
    pub row_skew_ratio: f64,
    /// ... and at least this many cells: 1,000.
    pub row_skew_min_cells: u64,
}

impl Default for SchemaLimits {
    fn default() -> Self {
        SchemaLimits {
            max_families: 3,
            max_family_name_bytes: 8,
            max_versions_without_ttl: 100,
            max_mean_qualifier_bytes: 16.0,
            max_cells_per_row: 100_000,
            row_skew_ratio: 10.0,
            row_skew_min_cells: 1_000,
        }
    }
}

/// [`schema_warnings_with`] with the default limits.
pub fn schema_warnings(table: &TableDescriptor) -> Vec<String> {
    schema_warnings_with(table, &SchemaLimits::default())
}

/// Warnings about a table's families: too many, long names, many versions
/// kept forever. One sentence each, without a `WARNING:` prefix.
pub fn schema_warnings_with(table: &TableDescriptor, limits: &SchemaLimits) -> Vec<String> {
    let mut out = Vec::new();
    let families = table.families();
    if families.len() > limits.max_families {
        out.push(format!(
            "table {} has {} column families; HBase's guidance is two or three at most \
             (a region flushes all its families together, and each is its own set of files)",
            table.name(),
            families.len()
        ));
    }
    for f in families {
        let len = f.name().len();
        if len > limits.max_family_name_bytes {
            out.push(format!(
                "family '{}' is {len} bytes long; every cell stores its family name, so keep it to \
                 a few bytes (at most {}, ideally one)",
                f.name(),
                limits.max_family_name_bytes
            ));
        }
        if f.max_versions > limits.max_versions_without_ttl && f.ttl_seconds.is_none() {
            out.push(format!(
                "family '{}' keeps {} versions with TTL FOREVER; every overwrite is kept, so rows \
                 can grow without bound (set a TTL or fewer VERSIONS)",
                f.name(),
                f.max_versions
            ));
        }
    }
    out
}

/// The shape of one sampled row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowShape {
    /// Cells (every version counted).
    pub cells: u64,
    /// Distinct columns (family and qualifier).
    pub columns: u64,
    /// Qualifier bytes summed over the distinct columns.
    pub qualifier_bytes: u64,
}

impl RowShape {
    /// The shape of a row from its cells' `(family, qualifier)`.
    pub fn from_columns<'a>(cells: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> RowShape {
        let mut seen: HashSet<(&[u8], &[u8])> = HashSet::new();
        let mut shape = RowShape::default();
        for (family, qualifier) in cells {
            shape.cells += 1;
            if seen.insert((family, qualifier)) {
                shape.columns += 1;
                shape.qualifier_bytes += qualifier.len() as u64;
            }
        }
        shape
    }
}

/// Warnings about sampled rows: rows growing without bound (a 99th
/// percentile of cells per row far above the median, or a row over the
/// limit) and long qualifiers.
pub fn row_warnings(rows: &[RowShape], limits: &SchemaLimits) -> Vec<String> {
    let mut out = Vec::new();
    if rows.is_empty() {
        return out;
    }
    let mut cells: Vec<u64> = rows.iter().map(|r| r.cells).collect();
    cells.sort_unstable();
    let at = |q: f64| cells[((cells.len() - 1) as f64 * q).round() as usize];
    let (p50, p99, max) = (at(0.5), at(0.99), cells[cells.len() - 1]);
    if p99 >= limits.row_skew_min_cells && p99 as f64 >= limits.row_skew_ratio * p50.max(1) as f64 {
        out.push(format!(
            "sampled rows grow without bound: the 99th percentile holds {p99} cells, the median \
             {p50} (over {}x); move the growing part (a time or a sequence) from the columns \
             into the row key",
            limits.row_skew_ratio
        ));
    } else if max > limits.max_cells_per_row {
        out.push(format!(
            "a sampled row holds {max} cells (over {}); a row lives in one region and is never \
             split, so wide rows become hotspots",
            limits.max_cells_per_row
        ));
    }
    let columns: u64 = rows.iter().map(|r| r.columns).sum();
    let bytes: u64 = rows.iter().map(|r| r.qualifier_bytes).sum();
    if columns > 0 {
        let mean = bytes as f64 / columns as f64;
        if mean > limits.max_mean_qualifier_bytes {
            out.push(format!(
                "qualifiers average {mean:.1} bytes (over {}); every cell stores its qualifier, \
                 so shorter names save space in every file and block",
                limits.max_mean_qualifier_bytes
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_types::ColumnFamilyDescriptor;

    #[test]
    fn a_lean_schema_has_no_warnings() {
        let t = TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("d"))
            .family(ColumnFamilyDescriptor::new("colfam1").max_versions(5));
        assert!(schema_warnings(&t).is_empty());
    }

    #[test]
    fn many_families_long_names_and_endless_versions_are_warned_about() {
        let t = TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("a"))
            .family(ColumnFamilyDescriptor::new("b"))
            .family(ColumnFamilyDescriptor::new("c"))
            .family(ColumnFamilyDescriptor::new("information").max_versions(1000));
        let w = schema_warnings(&t);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("4 column families"));
        assert!(w[1].contains("'information' is 11 bytes"));
        assert!(w[2].contains("1000 versions with TTL FOREVER"));
        let ttl = TableDescriptor::new("t").family(
            ColumnFamilyDescriptor::new("f")
                .max_versions(1000)
                .ttl_seconds(60),
        );
        assert!(schema_warnings(&ttl).is_empty());
    }

    #[test]
    fn rows_far_wider_than_the_median_are_warned_about() {
        let mut rows = vec![
            RowShape {
                cells: 10,
                columns: 10,
                qualifier_bytes: 20
            };
            99
        ];
        rows.push(RowShape {
            cells: 50_000,
            columns: 50_000,
            qualifier_bytes: 100_000,
        });
        rows.push(RowShape {
            cells: 60_000,
            columns: 60_000,
            qualifier_bytes: 120_000,
        });
        let w = row_warnings(&rows, &SchemaLimits::default());
        assert!(w.iter().any(|w| w.contains("grow without bound")), "{w:?}");
        let long = [RowShape::from_columns([
            (&b"f"[..], &b"a_very_long_qualifier_name_indeed"[..]),
            (&b"f"[..], &b"a_very_long_qualifier_name_indeed"[..]),
        ])];
        assert_eq!(long[0].cells, 2);
        assert_eq!(long[0].columns, 1);
        let w = row_warnings(&long, &SchemaLimits::default());
        assert!(
            w.iter()
                .any(|w| w.contains("qualifiers average 33.0 bytes")),
            "{w:?}"
        );
    }
}

/// Rows a column's filtered scans must have read before it is worth an
/// index suggestion.
const INDEX_ADVICE_MIN_ROWS: u64 = 1_000;

/// Index suggestions from a table's filtered scans
/// (`Database::filter_scans`): a column whose value filters read at least
/// [`INDEX_ADVICE_MIN_ROWS`] rows to return at most one in ten of them is
/// one a secondary index would answer directly, unless an index already
/// starts with it. One sentence each, with the shell command.
pub fn index_suggestions(table: &TableDescriptor, scans: &[crate::FilterScanStats]) -> Vec<String> {
    let mut out = Vec::new();
    for stats in scans {
        if stats.rows_scanned < INDEX_ADVICE_MIN_ROWS
            || stats.rows_returned.saturating_mul(10) > stats.rows_scanned
        {
            continue;
        }
        let indexed = table.indexes().iter().any(|index| {
            index
                .columns
                .first()
                .is_some_and(|c| c.family == stats.family && c.qualifier == stats.qualifier)
        });
        if indexed {
            continue;
        }
        let family = String::from_utf8_lossy(&stats.family);
        let qualifier = String::from_utf8_lossy(&stats.qualifier);
        let name: String = qualifier
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        out.push(format!(
            "{} scan(s) filtering on {family}:{qualifier} read {} rows to return {}: a secondary index answers them directly: create_index '{}', 'by_{name}', {{COLUMNS => ['{family}:{qualifier}']}}",
            stats.scans,
            stats.rows_scanned,
            stats.rows_returned,
            table.name()
        ));
    }
    out
}

#[cfg(test)]
mod index_advice_tests {
    use super::*;

    fn stats(scanned: u64, returned: u64) -> crate::FilterScanStats {
        crate::FilterScanStats {
            family: bytes::Bytes::from_static(b"o"),
            qualifier: bytes::Bytes::from_static(b"buyer"),
            scans: 3,
            rows_scanned: scanned,
            rows_returned: returned,
        }
    }

    #[test]
    fn a_filter_that_reads_the_table_for_a_few_rows_gets_an_index_suggestion() {
        let table =
            TableDescriptor::new("orders").family(basalt_types::ColumnFamilyDescriptor::new("o"));
        let advice = index_suggestions(&table, &[stats(30_000, 45)]);
        assert_eq!(advice.len(), 1);
        assert!(
            advice[0].contains("create_index 'orders', 'by_buyer', {COLUMNS => ['o:buyer']}"),
            "{}",
            advice[0]
        );
        // Small tables and selective-enough scans get none.
        assert!(index_suggestions(&table, &[stats(500, 1)]).is_empty());
        assert!(index_suggestions(&table, &[stats(30_000, 20_000)]).is_empty());
        // Nor does a column an index already starts with.
        let mut indexed = table.clone();
        indexed
            .add_index(basalt_types::IndexDescriptor::new(
                "i",
                vec![basalt_types::IndexColumn::new("o", "buyer")],
            ))
            .unwrap();
        assert!(index_suggestions(&indexed, &[stats(30_000, 45)]).is_empty());
    }
}
