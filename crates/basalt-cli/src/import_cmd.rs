//! `basalt import`: data from HBase. `hbase-snapshot` imports an HBase
//! snapshot (`basalt_import::snapshot_import` has the steps) as a Basalt
//! snapshot of the data set, then clones it into a table: through a
//! running server's admin calls (`--server`), or with the data directory
//! opened in place when no server holds it.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use basalt::admin::AdminRequest;
use basalt::export::ExportSide;
use basalt_import::{import_hbase_snapshot, ImportOptions, ImportProgress};

use crate::snapshot_cmd::{absolute, local_side, object_side};

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    command: ImportCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ImportCommand {
    /// Import an HBase snapshot: its table is created with HBase's
    /// descriptor and region boundaries, and every HBase store file is
    /// rewritten as a Basalt store file (no puts, no log): timestamps,
    /// versions and delete markers are kept. The same command resumes an
    /// import that stopped. Reads HBase's root directory (a local path,
    /// file:///DIR, or s3://BUCKET[/PREFIX] with the AWS_* environment),
    /// as HBase or its ExportSnapshot left it.
    HbaseSnapshot(SnapshotImportArgs),
    /// Bulk-load a directory of HFiles into an existing table, as HBase's
    /// BulkLoadHFiles does: DIR/<family>/<hfile> (HFileOutputFormat2's
    /// output); each file's rows go to the regions they belong to, as new
    /// store files, with a fresh sequence id (a loaded cell wins over what
    /// was there, loses to later writes). Through a running server
    /// (--server, which reads DIR on its own machine) or the data directory
    /// opened in place.
    Hfiles(HfilesArgs),
}

#[derive(Debug, clap::Args)]
struct HfilesArgs {
    /// The directory of HFiles: DIR/<family>/<hfile>.
    dir: PathBuf,
    /// The table to load into.
    #[arg(long)]
    table: String,
    /// The Basalt data directory (no server may hold it), when no --server.
    #[arg(long, value_name = "DIR", default_value = "basalt-data")]
    data_dir: PathBuf,
    /// A running Basalt server (its Thrift port, HOST:PORT) that holds the
    /// table's regions.
    #[arg(long, value_name = "HOST:PORT")]
    server: Option<String>,
}

#[derive(Debug, clap::Args)]
struct SnapshotImportArgs {
    /// The HBase snapshot's name.
    name: String,
    /// HBase's root directory (hbase.rootdir, or an ExportSnapshot target).
    #[arg(long, value_name = "DIR|URL")]
    from: String,
    /// The Basalt data directory to import into (default ./basalt-data).
    /// With --storage, only the root the storage's paths are named under.
    #[arg(long, value_name = "DIR", default_value = "basalt-data")]
    data_dir: PathBuf,
    /// The data set's object storage: s3://BUCKET[/PREFIX] or file:///DIR.
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
    /// The Basalt snapshot's name (default: the HBase snapshot's).
    #[arg(long = "as", value_name = "NAME")]
    snapshot_as: Option<String>,
    /// The table to create (default: the HBase table's name).
    #[arg(long, value_name = "TABLE")]
    table: Option<String>,
    /// A running Basalt server serving the data set (its Thrift port,
    /// HOST:PORT): the table is cloned through it. Without it the data
    /// directory is opened in place (no server may hold it).
    #[arg(long, value_name = "HOST:PORT")]
    server: Option<String>,
    /// Only make the Basalt snapshot; clone it later (`clone_snapshot` in
    /// the shell).
    #[arg(long, conflicts_with_all = ["table", "server"])]
    no_clone: bool,
    /// Files converted at once.
    #[arg(long, default_value_t = 2)]
    parallel: usize,
    /// Bytes of an HBase file read at once (at least 33): each conversion
    /// holds about this much of its file, and reads it in ranges of this
    /// size (one `GET` each from S3).
    #[arg(long, value_name = "BYTES", default_value_t = basalt_import::DEFAULT_READ_AHEAD)]
    read_ahead: usize,
}

fn local_files() -> std::sync::Arc<dyn basalt_engine::fs::FileStore> {
    std::sync::Arc::new(basalt_engine::fs::LocalFileStore::new())
}

pub fn run(args: ImportArgs) -> Result<(), String> {
    match args.command {
        ImportCommand::HbaseSnapshot(args) => import_snapshot(&args),
        ImportCommand::Hfiles(args) => import_hfiles(&args),
    }
}

fn import_snapshot(args: &SnapshotImportArgs) -> Result<(), String> {
    let source = hbase_side(&args.from)?;
    let dest = match &args.storage {
        Some(url) => object_side(url, &absolute(&args.data_dir)?)?,
        None => {
            std::fs::create_dir_all(&args.data_dir)
                .map_err(|e| format!("cannot create {}: {e}", args.data_dir.display()))?;
            local_side(&args.data_dir)?
        }
    };
    let options = ImportOptions {
        parallel: args.parallel.max(1),
        snapshot_name: args.snapshot_as.clone(),
        read_ahead: args.read_ahead,
        ..ImportOptions::default()
    };
    let started = std::time::Instant::now();
    let report = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0).with_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} of HBase files ({bytes_per_sec}, {eta} left)",
            )
            .map_err(|e| e.to_string())?,
        );
        let shown = |p: ImportProgress| {
            bar.set_length(p.bytes_total);
            bar.set_position(p.bytes_done);
        };
        let report = import_hbase_snapshot(&source, &args.name, &dest, &options, &shown);
        bar.finish_and_clear();
        report
    } else {
        let lines = |p: ImportProgress| {
            eprintln!(
                "imported {} of {} files ({} of {} bytes)",
                p.files_done, p.files_total, p.bytes_done, p.bytes_total
            );
        };
        import_hbase_snapshot(&source, &args.name, &dest, &options, &lines)
    }
    .map_err(|e| format!("cannot import HBase snapshot {}: {e}", args.name))?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "imported HBase snapshot {} of table {} as snapshot {}: {} regions, {} files ({} converted now, {} before), {} cells ({} delete markers), {} HBase bytes read, {} bytes written, {:.1} s ({:.0} cells/s)",
        args.name,
        report.table,
        report.snapshot,
        report.regions,
        report.files,
        report.converted,
        report.skipped,
        report.cells,
        report.markers,
        report.bytes_read,
        report.bytes_written,
        seconds,
        report.cells as f64 / seconds.max(1e-9)
    );
    say_tags_dropped(report.tags_dropped);
    if args.no_clone {
        println!(
            "clone it with: clone_snapshot '{}', '{}'",
            report.snapshot, report.table
        );
        return Ok(());
    }
    let table = args.table.clone().unwrap_or_else(|| report.table.clone());
    clone(args, &report.snapshot, &table)?;
    println!("table {table} created from snapshot {}", report.snapshot);
    Ok(())
}

fn import_hfiles(args: &HfilesArgs) -> Result<(), String> {
    let dir = absolute(&args.dir)?;
    let started = std::time::Instant::now();
    let failed = |e: &dyn std::fmt::Display| {
        format!(
            "cannot bulk-load {} into {}: {e}",
            dir.display(),
            args.table
        )
    };
    let report = match &args.server {
        Some(server) => {
            let reply = thrift_client(server)?
                .admin(AdminRequest::BulkLoad {
                    table: args.table.clone(),
                    dir: dir.display().to_string(),
                })
                .map_err(|e| failed(&e))?;
            match reply {
                basalt::admin::AdminReply::BulkLoaded(report) => report,
                other => return Err(failed(&format!("unexpected answer {other:?}"))),
            }
        }
        None => {
            let db = basalt::Database::open(&args.data_dir).map_err(|e| failed(&e))?;
            let report = db
                .bulk_load_hfiles(&args.table, &local_files(), &dir)
                .map_err(|e| failed(&e));
            db.close().map_err(|e| failed(&e))?;
            report?
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "bulk-loaded {} HFiles into {}: {} store files, {} cells, {} bytes read, {:.1} s ({:.0} cells/s)",
        report.files,
        args.table,
        report.pieces,
        report.cells,
        report.bytes_read,
        seconds,
        report.cells as f64 / seconds.max(1e-9)
    );
    say_tags_dropped(report.tags_dropped);
    Ok(())
}

/// What an import left out of HBase's cells, when it left anything.
fn say_tags_dropped(tags: u64) {
    if tags > 0 {
        println!(
            "{tags} cell tags other than TTL were left out (ACL and visibility labels: Basalt keeps access rules in its catalog)"
        );
    }
}

fn thrift_client(server: &str) -> Result<basalt_thrift::client::Client, String> {
    let (host, port) = server
        .rsplit_once(':')
        .and_then(|(h, p)| p.parse::<u16>().ok().map(|p| (h, p)))
        .ok_or_else(|| format!("--server {server}: expected HOST:PORT"))?;
    let address = format!("{host}:{port}");
    basalt_thrift::client::Client::connect(
        address.as_str(),
        false,
        basalt_thrift::Protocol::Binary { strict: true },
    )
    .map_err(|e| format!("cannot connect to a Basalt server at {address}: {e}"))
}

fn clone(args: &SnapshotImportArgs, snapshot: &str, table: &str) -> Result<(), String> {
    let failed = |e: &dyn std::fmt::Display| {
        format!(
            "the snapshot {snapshot} is imported, but cloning it into table {table} failed: {e} \
             (run clone_snapshot '{snapshot}', '{table}' in the shell once that is fixed)"
        )
    };
    match &args.server {
        Some(server) => {
            thrift_client(server)
                .map_err(|e| failed(&e))?
                .admin(AdminRequest::CloneSnapshot {
                    name: snapshot.to_string(),
                    table: table.to_string(),
                })
                .map_err(|e| failed(&e))?;
        }
        None if args.storage.is_some() => {
            return Err(failed(
                &"the data is on object storage: name the server serving it with --server",
            ))
        }
        None => {
            let db = basalt::Database::open(&args.data_dir).map_err(|e| failed(&e))?;
            db.clone_snapshot(snapshot, table).map_err(|e| failed(&e))?;
            db.close().map_err(|e| failed(&e))?;
        }
    }
    Ok(())
}

/// HBase's root: a storage URL or a local directory.
fn hbase_side(from: &str) -> Result<ExportSide, String> {
    if from.starts_with("s3://") || from.starts_with("file://") {
        // The root only names paths below the URL's prefix.
        object_side(from, Path::new("/hbase-root"))
    } else {
        local_side(Path::new(from))
    }
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The table (`ns:name`, or `name` in `default`).
    table: String,
    /// The first cluster's ZooKeeper quorum (HBase or Basalt), host:port.
    #[arg(long, value_name = "QUORUM")]
    zookeeper: String,
    /// The second cluster's ZooKeeper quorum.
    #[arg(long, value_name = "QUORUM")]
    with: String,
    /// The first cluster's base znode.
    #[arg(long, default_value = "/hbase")]
    znode_parent: String,
    /// The second cluster's base znode.
    #[arg(long, default_value = "/hbase")]
    with_znode_parent: String,
    /// The table's name on the second cluster, when it differs.
    #[arg(long, value_name = "TABLE")]
    with_table: Option<String>,
    /// Differing rows described.
    #[arg(long, default_value_t = basalt_import::compare::DEFAULT_SHOWN)]
    show: usize,
    /// Kerberos: both clusters' servers share the principal's service
    /// and realm (`_HOST`: each server is asked its own).
    #[command(flatten)]
    kerberos: crate::kerberos_args::KerberosClientArgs,
}

/// `basalt compare`: exit status 0 when equal, 1 when not (the ranges and
/// the first differing rows printed), an error otherwise.
pub fn compare(args: CompareArgs) -> Result<bool, String> {
    use basalt_import::compare::{compare, Side};
    if let Some((server_principal, protection)) = args.kerberos.settings()? {
        basalt_rpc::client::set_process_kerberos(basalt_rpc::client::KerberosClient {
            server_principal,
            protection,
            client_principal: None,
        });
    }
    let side = |name: &str, quorum: &str, parent: &str| Side {
        name: format!("{name} ({quorum})"),
        zookeeper: basalt_rpc::zk::ZkConfig {
            quorum: quorum.to_string(),
            znode_parent: parent.to_string(),
            ..basalt_rpc::zk::ZkConfig::default()
        },
    };
    let sides = [
        side("first", &args.zookeeper, &args.znode_parent),
        side("second", &args.with, &args.with_znode_parent),
    ];
    let report = compare(&sides, &args.table, args.with_table.as_deref(), args.show)
        .map_err(|e| format!("cannot compare {}: {e}", args.table))?;
    let shown = |b: &[u8]| {
        if b.is_empty() {
            "(end)".to_string()
        } else {
            format!("\"{}\"", b.escape_ascii())
        }
    };
    println!("range\trows (first/second)\tcells (first/second)\tdigest (first/second)\tequal");
    for range in &report.ranges {
        println!(
            "[{}, {})\t{}/{}\t{}/{}\t{}/{}\t{}",
            if range.start_key.is_empty() {
                "(start)".to_string()
            } else {
                shown(&range.start_key)
            },
            shown(&range.end_key),
            range.rows[0],
            range.rows[1],
            range.cells[0],
            range.cells[1],
            &range.digests[0][..12],
            &range.digests[1][..12],
            if range.equal() { "yes" } else { "NO" }
        );
    }
    for difference in &report.first_differences {
        println!("row {:?} differs:", difference.row);
        for (i, cells) in difference.cells.iter().enumerate() {
            let name = &sides[i].name;
            if cells.is_empty() {
                println!("  {name}: no such row");
            }
            for c in cells {
                println!(
                    "  {name}: {:?}:{:?} @{} {:?} = {:?}",
                    c.family, c.qualifier, c.timestamp, c.cell_type, c.value
                );
            }
        }
    }
    let rows: u64 = report.ranges.iter().map(|r| r.rows[0]).sum();
    let cells: u64 = report.ranges.iter().map(|r| r.cells[0]).sum();
    if report.equal() {
        println!("equal: {rows} rows, {cells} cells on both");
    } else {
        println!("DIFFERENT: {} rows differ", report.differing_rows);
    }
    Ok(report.equal())
}
