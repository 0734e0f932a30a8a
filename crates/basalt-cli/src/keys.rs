//! `basalt keys analyze`: the row-key advisor (`basalt::keys::advisor`)
//! on a file of sample keys, or on a table's keys read from a server or a
//! data directory.
//!
//! 1. Keys: from `--file` (one a line, as text, hex or HBase's `\xNN`
//!    escapes; write order unless `--sorted`), or from `--table` through
//!    the admin API's paged reads with `FirstKeyOnlyFilter() AND
//!    KeyOnlyFilter()` (one cell a row, no values), at most `--max-scan`
//!    rows. Either way at most `--sample` keys are kept, evenly spaced
//!    over the whole input (a stride that doubles as the input grows), in
//!    the input's order.
//! 2. With `--table`: the region bounds (`list_regions`), the schema
//!    (`describe`) and the shape of up to `--shape-rows` sampled rows
//!    (every version of every cell, values left out) for the warnings.
//! 3. `advisor::analyze_with`, printed as text or `--json`.
//!
//! Exit status: 0 with a report; 2 for bad input (flags, an unreadable or
//! empty file, an undecodable line); 1 when the table cannot be read
//! (no server, unknown table, a data directory a server holds).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use basalt::admin::{AdminReply, AdminRequest, ReadSpec};
use basalt::keys::advisor::{
    analyze_with, index_suggestions, row_warnings, schema_warnings, AnalyzeOptions, KeySample,
    RegionBounds, RowShape, SampleOrder, SchemaLimits,
};
use basalt::keys::text::{unescape_binary, unhex};
use basalt::{Admin, ColumnFamilyDescriptor, Database, TableDescriptor};
use basalt_thrift::{Client, Protocol};

#[derive(Debug, clap::Args)]
pub(crate) struct KeysArgs {
    #[command(subcommand)]
    command: KeysCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KeysCommand {
    /// Look at sample row keys (a file, or a table's keys) and say whether
    /// writes pile onto one region and what to change: salting, hashing,
    /// reversal, padding, split points. See docs/row-keys.md.
    Analyze(AnalyzeArgs),
}

/// How the lines of `--file` spell keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum KeyFormat {
    /// The line's bytes are the key.
    Text,
    /// Two hex digits a byte.
    Hex,
    /// HBase's escaped form: printable characters as is, other bytes as `\xNN`.
    BinaryEscaped,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("keys").required(true).multiple(true).args(["file", "table"])))]
struct AnalyzeArgs {
    /// A file of keys, one a line (blank lines are skipped). With --table
    /// too, the file's keys are judged against that table's regions.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// How the file spells keys.
    #[arg(long, value_enum, default_value_t = KeyFormat::Text)]
    format: KeyFormat,
    /// The file's keys are sorted (read from a table), not in write order.
    #[arg(long, requires = "file")]
    sorted: bool,
    /// The table to read keys (without --file), regions and schema from.
    #[arg(long)]
    table: Option<String>,
    /// The server holding the table.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Its Thrift port.
    #[arg(long, default_value_t = 9090)]
    port: u16,
    /// Open this data directory instead of connecting to a server (only
    /// when no server holds it).
    #[arg(long, value_name = "DIR", requires = "table", conflicts_with_all = ["host", "port"])]
    data_dir: Option<PathBuf>,
    /// Keys to keep, evenly spaced over the input.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    sample: u64,
    /// Most rows of a table to read keys from.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    max_scan: u64,
    /// Sampled rows whose cells are counted for the row-shape warnings.
    #[arg(long, default_value_t = 200)]
    shape_rows: usize,
    /// Regions to compute split points for (split points: one fewer).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=65_536))]
    regions: Option<u64>,
    /// Salt buckets to recommend (default: the table's region count, or 16).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    buckets: Option<u16>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// A failure and its exit status.
struct Failure {
    message: String,
    code: u8,
}

fn bad_input(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        code: 2,
    }
}

fn unreadable(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        code: 1,
    }
}

pub(crate) fn run(args: KeysArgs) -> ExitCode {
    let KeysCommand::Analyze(args) = args.command;
    match analyze(&args) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(f) => {
            eprintln!("basalt keys analyze: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Keeps at most `cap` items evenly spaced over a stream of unknown
/// length, in stream order: every `stride`-th item, the stride doubling
/// (and every other kept item dropped) when `2 * cap` are kept.
struct Sampler<T> {
    cap: usize,
    stride: u64,
    seen: u64,
    kept: Vec<T>,
}

impl<T> Sampler<T> {
    fn new(cap: u64) -> Self {
        Sampler {
            cap: usize::try_from(cap).unwrap_or(usize::MAX).max(1),
            stride: 1,
            seen: 0,
            kept: Vec::new(),
        }
    }

    fn push(&mut self, item: T) {
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(item);
            if self.kept.len() >= self.cap.saturating_mul(2) {
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    /// The kept items, thinned evenly to at most `cap`.
    fn finish(self) -> (Vec<T>, u64) {
        let (cap, seen) = (self.cap, self.seen);
        let len = self.kept.len();
        if len <= cap {
            return (self.kept, seen);
        }
        let mut next = 0usize;
        let mut taken = 0usize;
        let kept = self
            .kept
            .into_iter()
            .enumerate()
            .filter_map(|(i, item)| {
                (i == next && taken < cap).then(|| {
                    taken += 1;
                    next = taken * len / cap;
                    item
                })
            })
            .collect();
        (kept, seen)
    }
}

/// The keys of `--file`, sampled, and how many lines held keys.
fn read_file(args: &AnalyzeArgs, path: &PathBuf) -> Result<(Vec<Vec<u8>>, u64), Failure> {
    let file = std::fs::File::open(path)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
    let mut sampler = Sampler::new(args.sample);
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let mut line =
            line.map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        let key = match args.format {
            KeyFormat::Text => line,
            KeyFormat::Hex | KeyFormat::BinaryEscaped => {
                let text = std::str::from_utf8(&line).map_err(|_| {
                    bad_input(format!(
                        "{} line {}: not UTF-8 text, as {} keys must be",
                        path.display(),
                        i + 1,
                        if args.format == KeyFormat::Hex {
                            "hex"
                        } else {
                            "binary-escaped"
                        }
                    ))
                })?;
                let decoded = if args.format == KeyFormat::Hex {
                    unhex(text)
                } else {
                    unescape_binary(text)
                };
                decoded.map_err(|e| {
                    bad_input(format!("{} line {}: {}", path.display(), i + 1, e.detail()))
                })?
            }
        };
        sampler.push(key);
    }
    let (keys, seen) = sampler.finish();
    if keys.is_empty() {
        return Err(bad_input(format!("{} holds no keys", path.display())));
    }
    Ok((keys, seen))
}

/// Where a table lives: a server or a data directory.
enum Source {
    Remote(Client, String),
    Embedded(Database, String),
}

impl Source {
    fn open(args: &AnalyzeArgs) -> Result<Source, Failure> {
        match &args.data_dir {
            Some(dir) => Database::open(dir)
                .map(|db| Source::Embedded(db, format!("data directory {}", dir.display())))
                .map_err(|e| unreadable(format!("cannot open {}: {e}", dir.display()))),
            None => {
                let address = format!("{}:{}", args.host, args.port);
                Client::connect(address.as_str(), false, Protocol::Binary { strict: true })
                    .map(|c| Source::Remote(c, format!("server {address}")))
                    .map_err(|e| {
                        unreadable(format!(
                            "cannot connect to a Basalt server at {address}: {e}"
                        ))
                    })
            }
        }
    }

    fn call(&mut self, request: AdminRequest) -> Result<AdminReply, Failure> {
        match self {
            Source::Remote(client, _) => {
                client.admin(request).map_err(|e| unreadable(e.to_string()))
            }
            Source::Embedded(db, _) => db.execute(request).map_err(|e| unreadable(e.to_string())),
        }
    }

    fn name(&self) -> &str {
        match self {
            Source::Remote(_, n) | Source::Embedded(_, n) => n,
        }
    }

    fn close(self) {
        if let Source::Embedded(db, _) = self {
            // Nothing was written; a failed close loses nothing.
            let _ = db.close();
        }
    }
}

/// A table's regions, schema and (optionally) keys.
struct TableFacts {
    regions: Vec<RegionBounds>,
    descriptor: TableDescriptor,
    /// The table's value-filtered scans the server counted (for index
    /// advice); empty from a server that does not count them.
    filter_scans: Vec<basalt::FilterScanStats>,
    keys: Option<(Vec<Vec<u8>>, u64, bool)>,
    shapes: Vec<RowShape>,
}

fn read_table(
    source: &mut Source,
    table: &str,
    args: &AnalyzeArgs,
    want_keys: bool,
) -> Result<TableFacts, Failure> {
    let AdminReply::Table(t) = source.call(AdminRequest::Describe {
        table: table.to_string(),
    })?
    else {
        return Err(unreadable("unexpected reply to describe"));
    };
    let mut descriptor = TableDescriptor::new(t.name.clone());
    for f in &t.families {
        let mut family = ColumnFamilyDescriptor::new(f.name.clone());
        for (k, v) in &f.options {
            // Options the server printed; one this build does not know
            // only loses its warning.
            let _ = family.set_option(k, v);
        }
        descriptor = descriptor.family(family);
    }
    for index in t.indexes {
        // The server checked it; one this build cannot add only loses its
        // part of the advice.
        let _ = descriptor.add_index(index);
    }
    // A server that predates the count answers an error: no advice then.
    let filter_scans = match source.call(AdminRequest::FilterScans {
        table: table.to_string(),
    }) {
        Ok(AdminReply::FilterScans { scans }) => scans,
        _ => Vec::new(),
    };
    let regions = t
        .regions
        .iter()
        .map(|r| RegionBounds {
            start: r.start_key.to_vec(),
            end: r.end_key.to_vec(),
        })
        .collect();
    if !want_keys {
        return Ok(TableFacts {
            regions,
            descriptor,
            filter_scans,
            keys: None,
            shapes: Vec::new(),
        });
    }

    let mut sampler = Sampler::new(args.sample);
    let mut read = ReadSpec {
        filter: Some("FirstKeyOnlyFilter() AND KeyOnlyFilter()".to_string()),
        ..ReadSpec::default()
    };
    let mut truncated = false;
    'pages: loop {
        let AdminReply::Rows { rows, more, .. } = source.call(AdminRequest::Read {
            table: table.to_string(),
            read: read.clone(),
        })?
        else {
            return Err(unreadable("unexpected reply to read"));
        };
        let last = rows.last().map(|r| r.row.clone());
        for row in rows {
            if sampler.seen >= args.max_scan {
                truncated = true;
                break 'pages;
            }
            sampler.push(row.row.to_vec());
        }
        match (more, last) {
            (true, Some(last)) => read.after_row = Some(last),
            _ => break,
        }
    }
    let (keys, seen) = sampler.finish();

    // Row shapes of evenly spaced sampled rows.
    let mut shapes = Vec::new();
    if args.shape_rows > 0 && !keys.is_empty() {
        let step = keys.len().div_ceil(args.shape_rows).max(1);
        for key in keys.iter().step_by(step) {
            let AdminReply::Rows { rows, .. } = source.call(AdminRequest::Read {
                table: table.to_string(),
                read: ReadSpec {
                    start_row: key.clone().into(),
                    limit: Some(1),
                    versions: Some(u32::MAX),
                    filter: Some("KeyOnlyFilter()".to_string()),
                    ..ReadSpec::default()
                },
            })?
            else {
                return Err(unreadable("unexpected reply to read"));
            };
            if let Some(row) = rows.iter().find(|r| r.row[..] == key[..]) {
                shapes.push(RowShape::from_columns(
                    row.cells.iter().map(|c| (&c.family[..], &c.qualifier[..])),
                ));
            }
        }
    }
    Ok(TableFacts {
        regions,
        descriptor,
        filter_scans,
        keys: Some((keys, seen, truncated)),
        shapes,
    })
}

fn analyze(args: &AnalyzeArgs) -> Result<String, Failure> {
    let file_keys = match &args.file {
        Some(path) => Some(read_file(args, path)?),
        None => None,
    };
    let mut facts = None;
    let mut source_name = String::new();
    if let Some(table) = &args.table {
        let mut source = Source::open(args)?;
        let read = read_table(&mut source, table, args, file_keys.is_none());
        source_name = format!("table '{table}' on {}", source.name());
        source.close();
        facts = Some(read?);
    }

    let (keys, seen, order, from) = match (file_keys, facts.as_mut().and_then(|f| f.keys.take())) {
        (Some((keys, seen)), _) => {
            let path = args
                .file
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string());
            let order = if args.sorted {
                SampleOrder::Key
            } else {
                SampleOrder::Write
            };
            let from = if source_name.is_empty() {
                format!("file {path} ({seen} keys read)")
            } else {
                format!("file {path} ({seen} keys read), against the regions of {source_name}")
            };
            (keys, seen, order, from)
        }
        (None, Some((keys, seen, truncated))) => {
            if keys.is_empty() {
                return Err(unreadable(format!("{source_name} has no rows to sample")));
            }
            let note = if truncated {
                format!(
                    ", stopped at --max-scan {} rows: the rest of the table is unseen",
                    args.max_scan
                )
            } else {
                String::new()
            };
            let from = format!("{source_name} ({seen} rows scanned{note})");
            (keys, seen, SampleOrder::Key, from)
        }
        (None, None) => return Err(bad_input("give --file or --table")),
    };

    let options = AnalyzeOptions {
        buckets: args.buckets,
        regions: args
            .regions
            .map(|r| usize::try_from(r).unwrap_or(usize::MAX)),
        ..AnalyzeOptions::default()
    };
    let sample = KeySample::new(keys, order).population(seen);
    let regions = facts.as_ref().map(|f| f.regions.as_slice());
    let mut report = analyze_with(&sample, regions, &options);
    report.source = from;
    if let Some(f) = &facts {
        report.warnings.extend(schema_warnings(&f.descriptor));
        report
            .warnings
            .extend(row_warnings(&f.shapes, &SchemaLimits::default()));
        report
            .warnings
            .extend(index_suggestions(&f.descriptor, &f.filter_scans));
    }
    Ok(if args.json {
        report.to_json()
    } else {
        report.to_text()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_keeps_evenly_spaced_items_in_order() {
        let mut s = Sampler::new(10);
        for i in 0..1000u32 {
            s.push(i);
        }
        let (kept, seen) = s.finish();
        assert_eq!(seen, 1000);
        assert_eq!(kept.len(), 10);
        assert!(kept.windows(2).all(|w| w[0] < w[1]));
        assert!(kept[0] == 0 && kept[9] >= 800, "{kept:?}");
        let mut small = Sampler::new(10);
        for i in 0..5u32 {
            small.push(i);
        }
        assert_eq!(small.finish().0, vec![0, 1, 2, 3, 4]);
    }
}
