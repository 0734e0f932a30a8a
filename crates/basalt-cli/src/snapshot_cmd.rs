//! `basalt snapshot`: snapshots of a data set without a running server.
//! `export` copies one to another Basalt's storage (HBase's
//! ExportSnapshot; `basalt::export` has the steps), `list` shows them.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use basalt::export::{export_snapshot, ExportOptions, ExportProgress, ExportSide};
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_engine::layout::{self, SnapshotEntry};
use basalt_engine::snapshot::{read_manifest, DEFAULT_MAX_MANIFEST_BYTES};
use basalt_object_store::{open_uncached, StorageConfig, StorageUrl};

#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    #[command(subcommand)]
    command: SnapshotCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SnapshotCommand {
    /// Copy a snapshot and its files to another Basalt's storage (a data
    /// directory, file:///DIR or s3://BUCKET[/PREFIX]), where it is then a
    /// snapshot like its own: listed, cloned, restored. Each copy is read
    /// back and checked against the source's crc32c; the same command
    /// resumes an export that stopped. S3 settings come from the AWS_*
    /// environment (AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, keys, region).
    Export(ExportArgs),
    /// List the completed snapshots of a data set.
    List(SourceArgs),
}

#[derive(Debug, clap::Args)]
struct SourceArgs {
    /// The data directory (default ./basalt-data). With --storage, only the
    /// root the storage's paths are named under.
    #[arg(long, value_name = "DIR", default_value = "basalt-data")]
    data_dir: PathBuf,
    /// The data set's object storage: s3://BUCKET[/PREFIX] or file:///DIR.
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
}

#[derive(Debug, clap::Args)]
struct ExportArgs {
    /// The snapshot to export.
    name: String,
    /// Where to: another data directory, file:///DIR or s3://BUCKET[/PREFIX].
    #[arg(long, value_name = "URL")]
    to: String,
    #[command(flatten)]
    source: SourceArgs,
    /// Files copied at once.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// Seconds the hold at the source keeps the files if the export stops
    /// without ending it (it is renewed while the export runs).
    #[arg(long, default_value_t = 600)]
    lease_secs: u64,
}

pub fn run(args: SnapshotArgs) -> Result<(), String> {
    match args.command {
        SnapshotCommand::Export(args) => export(&args),
        SnapshotCommand::List(args) => list(&args),
    }
}

fn export(args: &ExportArgs) -> Result<(), String> {
    let source = source_side(&args.source)?;
    let dest = target_side(&args.to)?;
    let options = ExportOptions {
        parallel: args.parallel.max(1),
        lease: Duration::from_secs(args.lease_secs.max(1)),
        ..ExportOptions::default()
    };
    let report = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0).with_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
            )
            .map_err(|e| e.to_string())?,
        );
        let shown = |p: ExportProgress| {
            bar.set_length(p.bytes_total);
            bar.set_position(p.bytes_done);
        };
        let report = export_snapshot(&args.name, &source, &dest, &options, &shown);
        bar.finish_and_clear();
        report
    } else {
        // One line per file: what a log or a test can follow.
        let lines = |p: ExportProgress| {
            eprintln!("exported {} of {} bytes", p.bytes_done, p.bytes_total);
        };
        export_snapshot(&args.name, &source, &dest, &options, &lines)
    }
    .map_err(|e| format!("cannot export snapshot {}: {e}", args.name))?;
    println!(
        "exported snapshot {} to {}: {} files, {} copied now ({} bytes), {} copied before, {} copies refused on arrival and made again",
        args.name,
        dest.description,
        report.files,
        report.copied,
        report.bytes_copied,
        report.skipped,
        report.recopied
    );
    Ok(())
}

fn list(args: &SourceArgs) -> Result<(), String> {
    let side = source_side(args)?;
    let entries = side
        .files
        .list(&layout::snapshot_dir(&side.root))
        .map_err(|e| format!("cannot list snapshots at {}: {e}", side.description))?;
    for path in entries {
        let Some(SnapshotEntry::Snapshot(_, name)) = layout::snapshot_entry_of(&path) else {
            continue;
        };
        let manifest = read_manifest(side.files.as_ref(), &path, DEFAULT_MAX_MANIFEST_BYTES)
            .map_err(|e| format!("cannot read snapshot {name}: {e}"))?;
        println!(
            "{name}\ttable={}\tcreated_ms={}\tfiles={}\tbytes={}",
            manifest.table,
            manifest.created_ms,
            manifest.paths(&side.root).len(),
            manifest.file_bytes()
        );
    }
    Ok(())
}

fn source_side(args: &SourceArgs) -> Result<ExportSide, String> {
    match &args.storage {
        Some(url) => object_side(url, &absolute(&args.data_dir)?),
        None => local_side(&args.data_dir),
    }
}

/// A storage URL, or else a data directory.
fn target_side(target: &str) -> Result<ExportSide, String> {
    if target.starts_with("s3://") || target.starts_with("file://") {
        // The root only names paths; nothing is written under it locally.
        object_side(target, Path::new("/basalt-export-target"))
    } else {
        std::fs::create_dir_all(target).map_err(|e| format!("cannot create {target}: {e}"))?;
        local_side(Path::new(target))
    }
}

pub(crate) fn object_side(url: &str, root: &Path) -> Result<ExportSide, String> {
    let parsed = StorageUrl::parse(url).map_err(|e| e.to_string())?;
    let files = open_uncached(&StorageConfig::for_url(url), &parsed, root)
        .map_err(|e| format!("cannot use the storage {url}: {e}"))?;
    Ok(ExportSide {
        files,
        root: root.to_path_buf(),
        description: parsed.to_string(),
    })
}

pub(crate) fn local_side(dir: &Path) -> Result<ExportSide, String> {
    let root = absolute(dir)?;
    if !root.is_dir() {
        return Err(format!("{} is not a directory", root.display()));
    }
    Ok(ExportSide {
        files: Arc::new(LocalFileStore::new()) as Arc<dyn FileStore>,
        description: root.display().to_string(),
        root,
    })
}

pub(crate) fn absolute(dir: &Path) -> Result<PathBuf, String> {
    std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))
}
