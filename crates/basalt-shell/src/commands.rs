//! The commands: one table of name, group, usage and handler, and the
//! handlers, which read HBase's argument forms and print HBase's output.

use std::collections::BTreeMap;
use std::io::Write;

use bytes::Bytes;

use basalt::admin::{AdminReply, AdminRequest, AlterChange, FamilySpec, ReadSpec, RowReply};
use basalt::column::Column;
use basalt::{IndexColumn, IndexDescriptor, IndexTransform, NamespaceDescriptor};

use crate::backend::{Backend, ShellError, ShellResult};
use crate::format;
use crate::parse::Arg;

/// What a handler gets: the backend and where to print.
pub(crate) struct Ctx<'a> {
    pub backend: &'a mut dyn Backend,
    pub out: &'a mut dyn Write,
}

impl Ctx<'_> {
    pub fn line(&mut self, text: impl AsRef<str>) -> ShellResult<()> {
        writeln!(self.out, "{}", text.as_ref())
            .map_err(|e| ShellError::Other(format!("cannot write output: {e}")))
    }
}

/// What a command leaves after the `Took` line: HBase's `=> value`.
pub(crate) type Returned = Option<String>;

type Handler = fn(&mut Ctx<'_>, &[Arg]) -> ShellResult<Returned>;

/// One command of the shell.
pub(crate) struct Spec {
    pub name: &'static str,
    pub group: &'static str,
    pub usage: &'static str,
    /// `None` for `exit`, which the shell itself carries out.
    pub run: Option<Handler>,
}

/// The command groups in the order `help` lists them.
pub(crate) const GROUPS: &[&str] = &[
    "general",
    "ddl",
    "namespace",
    "dml",
    "tools",
    "snapshots",
    "security",
];

/// Every command.
pub(crate) static COMMANDS: &[Spec] = &[
    Spec { name: "status", group: "general", run: Some(status), usage: "status ['summary' | 'simple' | 'detailed']
  How many tables and regions this server serves, and its request counts; in a
  cluster, every live server (with its regions for 'detailed'), the dead ones
  and the regions in transition.
    status
    status 'simple'
    status 'detailed'" },
    Spec { name: "version", group: "general", run: Some(version), usage: "version
  The Basalt version behind this shell." },
    Spec { name: "whoami", group: "general", run: Some(whoami), usage: "whoami
  The current user and groups." },
    Spec { name: "help", group: "general", run: Some(help_command), usage: "help ['COMMAND' | 'GROUP']
  Lists the commands, or shows help for one command or group.
    help
    help 'get'
    help 'ddl'" },
    Spec { name: "exit", group: "general", run: None, usage: "exit
  Leaves the shell (also: quit, Ctrl-D)." },
    Spec { name: "create", group: "ddl", run: Some(create), usage: "create 'TABLE', 'FAMILY' | {NAME => 'FAMILY', OPTION => value, ...}, ... [, {SPLITS => ['k1', ...]} | {NUMREGIONS => n, SPLITALGO => 'HexStringSplit'}]
  Creates a table. Family options: VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS,
  BLOOMFILTER, COMPRESSION, BLOCKSIZE, BLOCKCACHE, IN_MEMORY, DATA_BLOCK_ENCODING,
  NEW_VERSION_BEHAVIOR.
  SPLITALGO is HexStringSplit, DecimalStringSplit or UniformSplit.
    create 't1', 'f1', 'f2'
    create 'mytable', {NAME => 'colfam1', BLOOMFILTER => 'ROWCOL'}
    create 't1', {NAME => 'f1', VERSIONS => 5, TTL => 86400}
    create 't1', 'f1', SPLITS => ['10', '20', '30']
    create 't1', 'f1', {NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}" },
    Spec { name: "alter", group: "ddl", run: Some(alter), usage: "alter 'TABLE', 'FAMILY' | {NAME => 'FAMILY', OPTION => value, ...} | {NAME => 'FAMILY', METHOD => 'delete'} | 'delete' => 'FAMILY', ...
  Adds a family, changes the given options of an existing one, or deletes one.
    alter 't1', NAME => 'f1', VERSIONS => 5
    alter 't1', 'f3'
    alter 't1', NAME => 'f2', METHOD => 'delete'
    alter 't1', 'delete' => 'f2'" },
    Spec { name: "create_index", group: "ddl", run: Some(create_index), usage: "create_index 'TABLE', 'INDEX', {COLUMNS => ['f:q', 'f:q/REVERSED', 'f:q/PAD(n)', 'f:q/PREFIX(n)'], COVER => ['f:q', ...]}
  Creates a secondary index the database keeps with every write, and fills
  it from the rows the table has. Read by it with scan's INDEX option.
    create_index 'orders', 'by_buyer', {COLUMNS => ['o:buyer', 'o:ts/REVERSED'], COVER => ['o:total']}" },
    Spec { name: "drop_index", group: "ddl", run: Some(drop_index), usage: "drop_index 'TABLE', 'INDEX'
  Drops a secondary index and its rows.
    drop_index 'orders', 'by_buyer'" },
    Spec { name: "describe", group: "ddl", run: Some(describe), usage: "describe 'TABLE'   (also: desc)
  The table's state and its families with every option.
    describe 't1'" },
    Spec { name: "desc", group: "ddl", run: Some(describe), usage: "desc 'TABLE'
  Same as describe.
    desc 't1'" },
    Spec { name: "disable", group: "ddl", run: Some(disable), usage: "disable 'TABLE'
  Stops the table from serving reads and writes (needed before drop).
    disable 't1'" },
    Spec { name: "enable", group: "ddl", run: Some(enable), usage: "enable 'TABLE'
  Lets a disabled table serve again.
    enable 't1'" },
    Spec { name: "is_enabled", group: "ddl", run: Some(is_enabled), usage: "is_enabled 'TABLE'
  true when the table is enabled.
    is_enabled 't1'" },
    Spec { name: "is_disabled", group: "ddl", run: Some(is_disabled), usage: "is_disabled 'TABLE'
  true when the table is disabled.
    is_disabled 't1'" },
    Spec { name: "drop", group: "ddl", run: Some(drop), usage: "drop 'TABLE'
  Deletes a disabled table and its data.
    drop 't1'" },
    Spec { name: "exists", group: "ddl", run: Some(exists), usage: "exists 'TABLE'
  Whether the table exists.
    exists 't1'" },
    Spec { name: "list", group: "ddl", run: Some(list), usage: "list ['REGEX']
  The tables, all or those whose whole name matches the regular expression.
    list
    list 'abc.*'" },
    Spec { name: "list_regions", group: "ddl", run: Some(list_regions), usage: "list_regions 'TABLE'
  The table's regions with their key ranges, store file size (MB) and requests.
    list_regions 't1'" },
    Spec { name: "get_splits", group: "ddl", run: Some(get_splits), usage: "get_splits 'TABLE'
  The table's split keys (the start keys of its regions but the first).
    get_splits 't1'" },
    Spec { name: "create_namespace", group: "namespace", run: Some(create_namespace), usage: "create_namespace 'NAMESPACE' [, {'PROPERTY_NAME' => 'PROPERTY_VALUE', ...}]
  Creates a namespace, optionally with properties; tables go into it as 'NAMESPACE:TABLE'.
    create_namespace 'ns1'
    create_namespace 'ns1', {'owner' => 'ops'}" },
    Spec { name: "alter_namespace", group: "namespace", run: Some(alter_namespace), usage: "alter_namespace 'NAMESPACE', {METHOD => 'set', 'PROPERTY_NAME' => 'PROPERTY_VALUE', ...} | {METHOD => 'unset', NAME => 'PROPERTY_NAME'}
  Sets or removes properties of a namespace.
    alter_namespace 'ns1', {METHOD => 'set', 'owner' => 'dev'}
    alter_namespace 'ns1', {METHOD => 'unset', NAME => 'owner'}" },
    Spec { name: "describe_namespace", group: "namespace", run: Some(describe_namespace), usage: "describe_namespace 'NAMESPACE'
  The namespace and its properties.
    describe_namespace 'ns1'" },
    Spec { name: "drop_namespace", group: "namespace", run: Some(drop_namespace), usage: "drop_namespace 'NAMESPACE'
  Deletes an empty namespace (drop its tables first).
    drop_namespace 'ns1'" },
    Spec { name: "list_namespace", group: "namespace", run: Some(list_namespace), usage: "list_namespace ['REGEX']
  The namespaces, all or those whose whole name matches the regular expression.
    list_namespace
    list_namespace 'ns.*'" },
    Spec { name: "list_namespace_tables", group: "namespace", run: Some(list_namespace_tables), usage: "list_namespace_tables 'NAMESPACE'
  The tables of a namespace.
    list_namespace_tables 'ns1'" },
    Spec { name: "put", group: "dml", run: Some(put), usage: "put 'TABLE', 'ROW', 'FAMILY:QUALIFIER', 'VALUE' [, TIMESTAMP]
  Writes one cell, at TIMESTAMP or now.
    put 't1', 'r1', 'c1:a', 'value'
    put 't1', \"r\\x00\\x01\", 'c1:a', 'value', 1700000000000" },
    Spec { name: "get", group: "dml", run: Some(get), usage: "get 'TABLE', 'ROW' [, 'COLUMN', ...] [, {COLUMN(S) => 'c' | ['c', ...], TIMESTAMP => ts, TIMERANGE => [min, max], VERSIONS => n, FILTER => \"...\"}]
  Reads one row: every column's newest version unless told otherwise.
    get 't1', 'r1'
    get 't1', 'r1', 'c1:a', 'c2'
    get 't1', 'r1', {COLUMN => 'c1', VERSIONS => 3}
    get 't1', 'r1', {TIMERANGE => [1000, 2000]}
    get 't1', 'r1', {FILTER => \"ValueFilter(=, 'binary:v')\"}" },
    Spec { name: "scan", group: "dml", run: Some(scan), usage: "scan 'TABLE' [, {COLUMNS => ['c', ...], STARTROW => 'r', STOPROW => 'r', ROWPREFIXFILTER => 'p', LIMIT => n, FILTER => \"...\", TIMERANGE => [min, max], TIMESTAMP => ts, VERSIONS => n, REVERSED => true, RAW => true, CACHE => n, INDEX => 'name'}]
  Reads rows in key order (or reversed).
    scan 't1'
    scan 'table1', {STARTROW => 'host1', STOPROW => 'host2'}
    scan 't1', {COLUMNS => ['c1:a', 'c2'], LIMIT => 10}
    scan 't1', {ROWPREFIXFILTER => 'user', REVERSED => true}
    scan 't1', {RAW => true, VERSIONS => 10}" },
    Spec { name: "count", group: "dml", run: Some(count), usage: "count 'TABLE' [, {INTERVAL => n, CACHE => n, FILTER => \"...\"}]
  Counts the rows, printing the count every INTERVAL rows (default 1000).
    count 't1'
    count 't1', INTERVAL => 100000, CACHE => 1000" },
    Spec { name: "delete", group: "dml", run: Some(delete), usage: "delete 'TABLE', 'ROW', 'COLUMN' [, TIMESTAMP]
  Deletes every version of a cell (up to TIMESTAMP when given).
    delete 't1', 'r1', 'c1:a'
    delete 't1', 'r1', 'c1:a', 1700000000000" },
    Spec { name: "deleteall", group: "dml", run: Some(deleteall), usage: "deleteall 'TABLE', 'ROW' [, 'COLUMN' [, TIMESTAMP]]
  Deletes a whole row, or every version of a column or family.
    deleteall 't1', 'r1'
    deleteall 't1', 'r1', 'c1'
    deleteall 't1', 'r1', 'c1:a', 1700000000000" },
    Spec { name: "incr", group: "dml", run: Some(incr), usage: "incr 'TABLE', 'ROW', 'COLUMN' [, INCREMENT]
  Adds INCREMENT (default 1) to a counter (an 8-byte big-endian long).
    incr 't1', 'r1', 'c1:hits'
    incr 't1', 'r1', 'c1:hits', 10" },
    Spec { name: "get_counter", group: "dml", run: Some(get_counter), usage: "get_counter 'TABLE', 'ROW', 'COLUMN'
  Reads a counter.
    get_counter 't1', 'r1', 'c1:hits'" },
    Spec { name: "append", group: "dml", run: Some(append), usage: "append 'TABLE', 'ROW', 'COLUMN', 'VALUE'
  Appends VALUE to the cell's current value.
    append 't1', 'r1', 'c1:log', 'more'" },
    Spec { name: "truncate", group: "dml", run: Some(truncate), usage: "truncate 'TABLE'
  Empties the table (disabled first if enabled), keeping its families; it
  comes back enabled, in one region.
    truncate 't1'" },
    Spec { name: "truncate_preserve", group: "dml", run: Some(truncate_preserve), usage: "truncate_preserve 'TABLE'
  As truncate, keeping the region boundaries.
    truncate_preserve 't1'" },
    Spec { name: "flush", group: "tools", run: Some(flush), usage: "flush 'TABLE'
  Writes the table's memstores to store files.
    flush 't1'" },
    Spec { name: "compact", group: "tools", run: Some(compact), usage: "compact 'TABLE'
  Minor compaction: merges the store files the policy picks.
    compact 't1'" },
    Spec { name: "major_compact", group: "tools", run: Some(major_compact), usage: "major_compact 'TABLE'
  Rewrites every store into one file, dropping deleted and expired cells.
    major_compact 't1'" },
    Spec { name: "split", group: "tools", run: Some(split), usage: "split 'TABLE' | 'REGION' [, 'SPLIT_KEY']
  Splits the table's regions (or one region, by full or encoded name), at
  SPLIT_KEY or near the middle of the data.
    split 't1'
    split 't1', 'm'
    split 'ENCODED_REGION_NAME'" },
    Spec { name: "merge_region", group: "tools", run: Some(merge_region), usage: "merge_region 'REGION_A', 'REGION_B'
  Merges two adjacent regions (full or encoded names).
    merge_region 'ENCODED_A', 'ENCODED_B'" },
    Spec { name: "assign", group: "tools", run: Some(assign), usage: "assign 'REGION'
  Cluster: opens a region that is assigned nowhere (encoded or full name).
    assign 'ENCODED_REGIONNAME'" },
    Spec { name: "balancer", group: "tools", run: Some(balancer), usage: "balancer [, 'force']
  Evens the number of regions per live server, then their load; true when
  it ran. It does not run while the balancer switch is off, nor while
  regions are in transition unless 'force' (for experts: moving regions
  while assignment is unsettled can make things worse).
    balancer
    balancer 'force'" },
    Spec { name: "balance_switch", group: "tools", run: Some(balance_switch), usage: "balance_switch true|false
  Turns the balancer on or off (the periodic runs and 'balancer'); prints
  the previous state. Kept in the catalog: it survives restarts and a
  change of master.
    balance_switch false" },
    Spec { name: "balancer_enabled", group: "tools", run: Some(balancer_enabled), usage: "balancer_enabled
  Whether the balancer switch is on.
    balancer_enabled" },
    Spec { name: "normalize", group: "tools", run: Some(normalize), usage: "normalize
  Runs the region normalizer once now: merges small cold neighbours and
  splits regions past twice their table's average size (docs/normalizer.md);
  prints each move with its reason; true when it ran. It does not run
  while the normalizer switch is off.
    normalize" },
    Spec { name: "normalizer_switch", group: "tools", run: Some(normalizer_switch), usage: "normalizer_switch true|false
  Turns the region normalizer on or off (the periodic runs and
  'normalize'); prints the previous state. Off by default; kept in the
  catalog. It applies to every table.
    normalizer_switch true" },
    Spec { name: "normalizer_enabled", group: "tools", run: Some(normalizer_enabled), usage: "normalizer_enabled
  Whether the normalizer switch is on.
    normalizer_enabled" },
    Spec { name: "move", group: "tools", run: Some(move_region), usage: "move 'ENCODED_REGIONNAME' [, 'SERVER_NAME']
  Cluster: moves a region to the server named 'host,port,startcode' (see
  status 'detailed'), or to another server the master picks.
    move 'ENCODED_REGIONNAME'
    move 'ENCODED_REGIONNAME', 'host187.example.com,16020,1289493121758'" },
    Spec { name: "unassign", group: "tools", run: Some(unassign), usage: "unassign 'REGION'
  Cluster: closes a region (encoded or full name); it stays closed, its
  rows unavailable, until assign (or move).
    unassign 'ENCODED_REGIONNAME'" },
    Spec { name: "snapshot", group: "snapshots", run: Some(snapshot), usage: "snapshot 'TABLE', 'SNAPSHOT' [, {SKIP_FLUSH => true, TTL => SECONDS}]
  Takes a snapshot of a table: its schema, regions and store files at this
  point, referenced, not copied (docs/snapshots.md). Each region is flushed
  first unless SKIP_FLUSH; writes go on. With TTL the snapshot is deleted
  that many seconds later (while snapshot cleanup is on).
    snapshot 'sourceTable', 'snapshotName'
    snapshot 'namespace:sourceTable', 'snapshotName', {SKIP_FLUSH => true}
    snapshot 'sourceTable', 'snapshotName', {TTL => 86400}" },
    Spec { name: "list_snapshots", group: "snapshots", run: Some(list_snapshots), usage: "list_snapshots ['REGEX']
  Lists the snapshots, those whose name matches the regular expression if
  given.
    list_snapshots
    list_snapshots 'abc.*'" },
    Spec { name: "delete_snapshot", group: "snapshots", run: Some(delete_snapshot), usage: "delete_snapshot 'SNAPSHOT'
  Deletes a snapshot; the store files nothing else references go with it.
    delete_snapshot 'snapshotName'" },
    Spec { name: "clone_snapshot", group: "snapshots", run: Some(clone_snapshot), usage: "clone_snapshot 'SNAPSHOT', 'TABLE'
  Creates a new table from a snapshot, with its schema, regions and data;
  the two share the store files (nothing is copied). The table must not
  exist.
    clone_snapshot 'snapshotName', 'tableName'
    clone_snapshot 'snapshotName', 'namespace:tableName'" },
    Spec { name: "restore_snapshot", group: "snapshots", run: Some(restore_snapshot), usage: "restore_snapshot 'SNAPSHOT'
  Returns the snapshot's table to the snapshot: its schema, regions and
  data as they were. The table must be disabled, and stays so.
    disable 'tableName'
    restore_snapshot 'snapshotName'" },
    Spec { name: "snapshot_cleanup_switch", group: "snapshots", run: Some(snapshot_cleanup_switch), usage: "snapshot_cleanup_switch true|false
  Turns the deletion of snapshots past their TTL on or off; prints the
  previous state. On by default; kept in the catalog.
    snapshot_cleanup_switch false" },
    Spec { name: "snapshot_cleanup_enabled", group: "snapshots", run: Some(snapshot_cleanup_enabled), usage: "snapshot_cleanup_enabled
  Whether snapshot cleanup is on.
    snapshot_cleanup_enabled" },
    Spec { name: "grant", group: "security", run: Some(grant), usage: "grant 'USER', 'PERMISSIONS' [, 'TABLE' [, 'FAMILY' [, 'QUALIFIER']]]
grant 'USER', 'PERMISSIONS', '@NAMESPACE'
  Gives a user (or '@group') actions, letters of 'RWXCA' (READ, WRITE,
  EXEC, CREATE, ADMIN): everywhere, on a namespace, a table, one family
  or one column; added to what it holds there. Needs access control on
  (docs/security.md) and ADMIN at that scope.
    grant 'bob', 'RWXCA'
    grant '@admins', 'RWXCA'
    grant 'bob', 'RW', 'ns1:t1', 'f1', 'col1'
    grant 'bob', 'C', '@ns1'" },
    Spec { name: "revoke", group: "security", run: Some(revoke), usage: "revoke 'USER' [, 'TABLE' [, 'FAMILY' [, 'QUALIFIER']]]
revoke 'USER', '@NAMESPACE'
  Takes away every action a user (or '@group') holds at exactly that
  scope (everywhere when none is named).
    revoke 'bob'
    revoke 'bob', 'ns1:t1', 'f1', 'col1'
    revoke '@admins', '@ns1'" },
    Spec { name: "user_permission", group: "security", run: Some(user_permission), usage: "user_permission ['TABLE_REGEX' | '@NAMESPACE_REGEX']
  Lists the grants: the global ones (and the superusers) without an
  argument, those of the matching tables or namespaces with one.
    user_permission
    user_permission 'table1'
    user_permission 'namespace1:table.*'
    user_permission '@ns.*'" },
];

/// The command called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Spec> {
    COMMANDS.iter().find(|c| c.name == name)
}

// ---- argument helpers ----

fn usage(message: impl Into<String>) -> ShellError {
    ShellError::Usage(message.into())
}

fn arity(args: &[Arg], min: usize, max: usize) -> ShellResult<()> {
    if args.len() < min || args.len() > max {
        let expected = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(usage(format!(
            "wrong number of arguments ({} for {expected})",
            args.len()
        )));
    }
    Ok(())
}

fn bytes_of(arg: &Arg, what: &str) -> ShellResult<Bytes> {
    match arg {
        Arg::Str(b) => Ok(b.clone()),
        other => Err(usage(format!(
            "{what} must be a string, not {} ({other})",
            other.type_name()
        ))),
    }
}

/// A value that HBase's shell turns into bytes: strings, and numbers as
/// their decimal text.
fn value_of(arg: &Arg, what: &str) -> ShellResult<Bytes> {
    match arg {
        Arg::Int(i) => Ok(Bytes::from(i.to_string())),
        other => bytes_of(other, what),
    }
}

fn text_of(arg: &Arg, what: &str) -> ShellResult<String> {
    let b = bytes_of(arg, what)?;
    String::from_utf8(b.to_vec()).map_err(|_| usage(format!("{what} must be valid UTF-8")))
}

fn table_of(args: &[Arg]) -> ShellResult<String> {
    match args.first() {
        Some(a) => text_of(a, "the table name"),
        None => Err(usage("the table name is missing")),
    }
}

fn int_of(arg: &Arg, what: &str) -> ShellResult<i64> {
    match arg {
        Arg::Int(i) => Ok(*i),
        other => Err(usage(format!(
            "{what} must be an integer, not {} ({other})",
            other.type_name()
        ))),
    }
}

fn count_of(arg: &Arg, what: &str) -> ShellResult<usize> {
    let n = int_of(arg, what)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| usage(format!("{what} must be a positive integer, not {n}")))
}

fn bool_of(arg: &Arg, what: &str) -> ShellResult<bool> {
    match arg {
        Arg::Bool(b) => Ok(*b),
        Arg::Str(s) if s.eq_ignore_ascii_case(b"true") => Ok(true),
        Arg::Str(s) if s.eq_ignore_ascii_case(b"false") => Ok(false),
        other => Err(usage(format!(
            "{what} must be true or false, not {} ({other})",
            other.type_name()
        ))),
    }
}

/// A hash with its keys upper-cased (constants and strings alike).
fn hash_of(arg: &Arg) -> ShellResult<Vec<(String, Arg)>> {
    let Arg::Hash(pairs) = arg else {
        return Err(usage(format!(
            "expected a hash ({{KEY => value}}), not {} ({arg})",
            arg.type_name()
        )));
    };
    pairs
        .iter()
        .map(|(k, v)| {
            let key = match k {
                Arg::Const(c) => c.clone(),
                Arg::Str(s) => String::from_utf8_lossy(s).into_owned(),
                other => {
                    return Err(usage(format!(
                        "hash keys must be names, not {} ({other})",
                        other.type_name()
                    )))
                }
            };
            Ok((key.to_ascii_uppercase(), v.clone()))
        })
        .collect()
}

fn unknown_key(key: &str, allowed: &[&str]) -> ShellError {
    usage(format!(
        "unknown option {key}; expected one of {}",
        allowed.join(", ")
    ))
}

fn columns_of(arg: &Arg) -> ShellResult<Vec<Bytes>> {
    match arg {
        Arg::Array(items) => items.iter().map(|c| bytes_of(c, "a column")).collect(),
        other => Ok(vec![bytes_of(other, "a column")?]),
    }
}

fn time_range_of(arg: &Arg) -> ShellResult<(i64, i64)> {
    match arg {
        Arg::Array(items) if items.len() == 2 => Ok((
            int_of(&items[0], "TIMERANGE's start")?,
            int_of(&items[1], "TIMERANGE's end")?,
        )),
        other => Err(usage(format!(
            "TIMERANGE must be [start, end], not {other}"
        ))),
    }
}

fn exact_timestamp(arg: &Arg) -> ShellResult<(i64, i64)> {
    let ts = int_of(arg, "TIMESTAMP")?;
    Ok((ts, ts.saturating_add(1)))
}

fn option_text(arg: &Arg, key: &str) -> ShellResult<String> {
    match arg {
        Arg::Str(_) => text_of(arg, key),
        Arg::Int(i) => Ok(i.to_string()),
        Arg::Bool(b) => Ok(b.to_string()),
        Arg::Const(c) => Ok(c.clone()),
        other => Err(usage(format!(
            "{key} must be a string, number or boolean, not {} ({other})",
            other.type_name()
        ))),
    }
}

const FAMILY_OPTIONS: &[&str] = &[
    "VERSIONS",
    "MIN_VERSIONS",
    "TTL",
    "KEEP_DELETED_CELLS",
    "BLOOMFILTER",
    "COMPRESSION",
    "BLOCKSIZE",
    "BLOCKCACHE",
    "IN_MEMORY",
    "DATA_BLOCK_ENCODING",
    "NEW_VERSION_BEHAVIOR",
];

fn family_of(pairs: &[(String, Arg)]) -> ShellResult<FamilySpec> {
    let mut spec = FamilySpec::default();
    for (k, v) in pairs {
        match k.as_str() {
            "NAME" => spec.name = text_of(v, "NAME")?,
            k if FAMILY_OPTIONS.contains(&k) => {
                spec.options.insert(k.to_string(), option_text(v, k)?);
            }
            other => {
                let mut allowed = vec!["NAME"];
                allowed.extend_from_slice(FAMILY_OPTIONS);
                return Err(unknown_key(other, &allowed));
            }
        }
    }
    if spec.name.is_empty() {
        return Err(usage("a family hash needs NAME => 'family'"));
    }
    Ok(spec)
}

fn took_placeholder() -> Returned {
    None
}

// ---- general ----

fn status(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let kind = match args.first() {
        Some(a) => text_of(a, "the status format")?,
        None => "summary".into(),
    };
    let AdminReply::Status(s) = ctx.backend.admin(AdminRequest::Status)? else {
        return Err(ShellError::Other("unexpected reply to status".into()));
    };
    if let Some(cluster) = &s.cluster {
        let lines = match kind.as_str() {
            "summary" => vec![format::cluster_summary(cluster)],
            "simple" => format::cluster_simple(cluster),
            "detailed" => format::cluster_detailed(cluster),
            other => {
                return Err(usage(format!(
                    "unknown status format '{other}'; expected 'summary', 'simple' or 'detailed'"
                )))
            }
        };
        for l in lines {
            ctx.line(l)?;
        }
        ctx.line(gateways_line(&s.gateways))?;
        return Ok(took_placeholder());
    }
    match kind.as_str() {
        "summary" => ctx.line(format!(
            "1 active master, 0 backup masters, 1 servers, 0 dead, {:.4} average load",
            s.regions as f64
        ))?,
        "simple" | "detailed" => {
            ctx.line("active master: basalt")?;
            ctx.line("1 live servers")?;
            ctx.line(format!(
                "    basalt: requestsPerSecond={:.1}, numberOfOnlineRegions={}, numberOfTables={}, readRequestsCount={}, writeRequestsCount={}",
                s.requests_per_second, s.regions, s.tables, s.read_requests, s.write_requests
            ))?;
            ctx.line("0 dead servers")?;
        }
        other => {
            return Err(usage(format!(
                "unknown status format '{other}'; expected 'summary', 'simple' or 'detailed'"
            )))
        }
    }
    ctx.line(gateways_line(&s.gateways))?;
    // Only when something is wrong, so a healthy status keeps HBase's look.
    if s.failed_regions > 0 || s.corruption_errors > 0 {
        ctx.line(format!(
            "{} regions FAILED_OPEN, {} reads met corrupt data (see list_regions and `basalt check`)",
            s.failed_regions, s.corruption_errors
        ))?;
    }
    Ok(took_placeholder())
}

/// `gateways: thrift 127.0.0.1:9090, rest 127.0.0.1:8080`, or what an
/// embedded database (no network gateways) has.
fn gateways_line(gateways: &[basalt::admin::GatewayReply]) -> String {
    if gateways.is_empty() {
        return "gateways: none (embedded database)".to_string();
    }
    let list: Vec<String> = gateways
        .iter()
        .map(|g| format!("{} {}", g.protocol, g.address))
        .collect();
    format!("gateways: {}", list.join(", "))
}

fn version(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 0)?;
    ctx.line(format!(
        "Basalt {}, HBase shell compatible",
        env!("CARGO_PKG_VERSION")
    ))?;
    Ok(None)
}

fn whoami(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 0)?;
    if let Some(principal) = ctx.backend.kerberos_principal() {
        // As HBase's shell prints a Kerberos login: the principal, then
        // the groups of its short name.
        let short = principal
            .split(['/', '@'])
            .next()
            .unwrap_or_default()
            .to_string();
        ctx.line(format!("{principal} (auth:KERBEROS)"))?;
        ctx.line(format!("    groups: {short}"))?;
        return Ok(None);
    }
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    ctx.line(format!("{user} (auth:SIMPLE)"))?;
    ctx.line(format!("    groups: {user}"))?;
    Ok(None)
}

/// The text of `help` without arguments.
pub(crate) fn help_text() -> Vec<String> {
    let mut out = vec![
        format!(
            "Basalt shell, version {}. Type 'help \"COMMAND\"' (e.g. 'help \"get\"') for help on a command,",
            env!("CARGO_PKG_VERSION")
        ),
        "or 'help \"GROUP\"' (e.g. 'help \"ddl\"') for a group of commands.".to_string(),
        String::new(),
    ];
    for group in GROUPS {
        let names: Vec<&str> = COMMANDS
            .iter()
            .filter(|c| c.group == *group)
            .map(|c| c.name)
            .collect();
        out.push(format!("  Group name: {group}"));
        out.push(format!("  Commands: {}", names.join(", ")));
        out.push(String::new());
    }
    out.push(
        "Arguments are Ruby literals: 'strings' or \"strings\" (with \\xNN escapes), numbers,"
            .into(),
    );
    out.push("true/false, [arrays] and {KEY => value} hashes; separate commands with ';'.".into());
    out
}

fn help_command(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let Some(arg) = args.first() else {
        for l in help_text() {
            ctx.line(l)?;
        }
        return Ok(None);
    };
    let topic = text_of(arg, "the help topic")?;
    if let Some(spec) = find(&topic) {
        ctx.line(spec.usage)?;
    } else if GROUPS.contains(&topic.as_str()) {
        for spec in COMMANDS.iter().filter(|c| c.group == topic) {
            ctx.line(format!("Command: {}", spec.name))?;
            ctx.line(spec.usage)?;
            ctx.line("")?;
        }
    } else {
        return Err(usage(format!("no command or group named '{topic}'")));
    }
    Ok(None)
}

// ---- namespace ----

fn namespace_of_args(args: &[Arg]) -> ShellResult<String> {
    match args.first() {
        Some(a) => text_of(a, "the namespace name"),
        None => Err(usage("the namespace name is missing")),
    }
}

/// A hash's pairs with keys as written: property names are case-sensitive
/// (unlike METHOD and NAME, which `alter_namespace` reads in any case).
fn property_pairs(arg: &Arg) -> ShellResult<Vec<(String, Arg)>> {
    let Arg::Hash(pairs) = arg else {
        return Err(usage(format!(
            "expected a hash ({{KEY => value}}), not {} ({arg})",
            arg.type_name()
        )));
    };
    pairs
        .iter()
        .map(|(k, v)| match k {
            Arg::Const(c) => Ok((c.clone(), v.clone())),
            Arg::Str(s) => Ok((String::from_utf8_lossy(s).into_owned(), v.clone())),
            other => Err(usage(format!(
                "property names must be strings, not {} ({other})",
                other.type_name()
            ))),
        })
        .collect()
}

fn create_namespace(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 2)?;
    let mut namespace = NamespaceDescriptor::new(namespace_of_args(args)?);
    if let Some(props) = args.get(1) {
        for (key, value) in property_pairs(props)? {
            let value =
                String::from_utf8_lossy(&value_of(&value, "a property value")?).into_owned();
            namespace.properties.insert(key, value);
        }
    }
    ctx.backend
        .admin(AdminRequest::CreateNamespace { namespace })?;
    Ok(None)
}

fn alter_namespace(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 2)?;
    let name = namespace_of_args(args)?;
    let pairs = property_pairs(&args[1])?;
    let method = pairs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("METHOD"))
        .map(|(_, v)| text_of(v, "METHOD"))
        .transpose()?
        .ok_or_else(|| usage("alter_namespace needs METHOD => 'set' or 'unset'"))?;
    let rest = pairs
        .into_iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("METHOD"));
    let mut set = std::collections::BTreeMap::new();
    let mut unset = Vec::new();
    match method.to_ascii_lowercase().as_str() {
        "set" => {
            for (key, value) in rest {
                let value =
                    String::from_utf8_lossy(&value_of(&value, "a property value")?).into_owned();
                set.insert(key, value);
            }
        }
        "unset" => {
            for (key, value) in rest {
                if !key.eq_ignore_ascii_case("NAME") {
                    return Err(unknown_key(&key, &["METHOD", "NAME"]));
                }
                unset.push(text_of(&value, "NAME")?);
            }
        }
        other => {
            return Err(usage(format!(
                "unknown METHOD '{other}'; expected 'set' or 'unset'"
            )))
        }
    }
    if set.is_empty() && unset.is_empty() {
        return Err(usage("alter_namespace names no property"));
    }
    ctx.backend
        .admin(AdminRequest::AlterNamespace { name, set, unset })?;
    Ok(None)
}

fn describe_namespace(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let name = namespace_of_args(args)?;
    let AdminReply::Namespaces { namespaces } = ctx
        .backend
        .admin(AdminRequest::DescribeNamespace { name })?
    else {
        return Err(ShellError::Other(
            "unexpected reply to describe_namespace".into(),
        ));
    };
    ctx.line("DESCRIPTION")?;
    for ns in &namespaces {
        let mut parts = vec![format!("NAME => '{}'", ns.name)];
        parts.extend(ns.properties.iter().map(|(k, v)| format!("{k} => '{v}'")));
        ctx.line(format!("{{{}}}", parts.join(", ")))?;
    }
    Ok(None)
}

fn drop_namespace(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let name = namespace_of_args(args)?;
    ctx.backend.admin(AdminRequest::DropNamespace { name })?;
    Ok(None)
}

fn list_namespace(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let pattern = name_pattern(args)?;
    let AdminReply::Namespaces { namespaces } = ctx.backend.admin(AdminRequest::ListNamespaces)?
    else {
        return Err(ShellError::Other(
            "unexpected reply to list_namespace".into(),
        ));
    };
    let names: Vec<String> = namespaces
        .into_iter()
        .map(|n| n.name)
        .filter(|n| pattern.as_ref().is_none_or(|p| p.is_match(n)))
        .collect();
    name_list(ctx, "NAMESPACE", &names)
}

/// A listing as HBase's `list` prints it: the heading, a name a line, the
/// row count; the names are also the command's value.
fn name_list(ctx: &mut Ctx<'_>, heading: &str, names: &[impl AsRef<str>]) -> ShellResult<Returned> {
    ctx.line(heading)?;
    for n in names {
        ctx.line(n.as_ref())?;
    }
    ctx.line(format::rows(names.len() as u64))?;
    Ok(Some(format::ruby_array(
        names.iter().map(|n| n.as_ref().as_bytes()),
    )))
}

fn list_namespace_tables(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let name = namespace_of_args(args)?;
    let AdminReply::Tables { tables } = ctx
        .backend
        .admin(AdminRequest::ListNamespaceTables { name })?
    else {
        return Err(ShellError::Other(
            "unexpected reply to list_namespace_tables".into(),
        ));
    };
    // HBase lists the qualifiers: the namespace is the one asked about.
    let qualifiers: Vec<&str> = tables
        .iter()
        .map(|t| t.split_once(':').map_or(t.as_str(), |(_, q)| q))
        .collect();
    name_list(ctx, "TABLE", &qualifiers)
}

// ---- ddl ----

fn create(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, usize::MAX)?;
    let table = table_of(args)?;
    let mut families = Vec::new();
    let mut splits = Vec::new();
    let mut num_regions = None;
    let mut split_algo = None;
    for arg in &args[1..] {
        match arg {
            Arg::Str(_) => families.push(FamilySpec {
                name: text_of(arg, "a family name")?,
                options: BTreeMap::new(),
            }),
            Arg::Hash(_) => {
                let pairs = hash_of(arg)?;
                if pairs.iter().any(|(k, _)| k == "NAME") {
                    families.push(family_of(&pairs)?);
                    continue;
                }
                for (k, v) in &pairs {
                    match k.as_str() {
                        "SPLITS" => match v {
                            Arg::Array(items) => {
                                for i in items {
                                    splits.push(value_of(i, "a split key")?);
                                }
                            }
                            other => {
                                return Err(usage(format!(
                                    "SPLITS must be an array of keys, not {other}"
                                )))
                            }
                        },
                        "NUMREGIONS" => num_regions = Some(count_of(v, "NUMREGIONS")?),
                        "SPLITALGO" => split_algo = Some(text_of(v, "SPLITALGO")?),
                        other => {
                            return Err(unknown_key(
                                other,
                                &["NAME", "SPLITS", "NUMREGIONS", "SPLITALGO"],
                            ))
                        }
                    }
                }
            }
            other => {
                return Err(usage(format!(
                    "a family must be a name or a hash, not {} ({other})",
                    other.type_name()
                )))
            }
        }
    }
    if families.is_empty() {
        return Err(usage("a table needs at least one column family"));
    }
    let warnings = format::schema_warnings(
        &table,
        families.iter().map(|f| {
            let options = f.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            (f.name.as_str(), options.collect())
        }),
    );
    ctx.backend.admin(AdminRequest::Create {
        table: table.clone(),
        families,
        splits,
        num_regions,
        split_algo,
    })?;
    ctx.line(format!("Created table {table}"))?;
    // Advice after the command's own output; never a refusal.
    for w in warnings {
        ctx.line(w)?;
    }
    Ok(Some(format!("Hbase::Table - {table}")))
}

fn alter(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, usize::MAX)?;
    let table = table_of(args)?;
    let mut changes = Vec::new();
    for arg in &args[1..] {
        match arg {
            Arg::Str(_) => changes.push(AlterChange::Set {
                family: FamilySpec {
                    name: text_of(arg, "a family name")?,
                    options: BTreeMap::new(),
                },
            }),
            Arg::Hash(_) => {
                let pairs = hash_of(arg)?;
                if let Some((_, v)) = pairs.iter().find(|(k, _)| k == "DELETE") {
                    if pairs.len() != 1 {
                        return Err(usage("'delete' => 'family' stands alone in its hash"));
                    }
                    changes.push(AlterChange::Delete {
                        name: text_of(v, "the family to delete")?,
                    });
                    continue;
                }
                let method = pairs
                    .iter()
                    .find(|(k, _)| k == "METHOD")
                    .map(|(_, v)| text_of(v, "METHOD"))
                    .transpose()?;
                let rest: Vec<(String, Arg)> =
                    pairs.into_iter().filter(|(k, _)| k != "METHOD").collect();
                match method.as_deref() {
                    Some("delete") => {
                        let Some((_, name)) = rest.iter().find(|(k, _)| k == "NAME") else {
                            return Err(usage("METHOD => 'delete' needs NAME => 'family'"));
                        };
                        changes.push(AlterChange::Delete {
                            name: text_of(name, "NAME")?,
                        });
                    }
                    None => changes.push(AlterChange::Set {
                        family: family_of(&rest)?,
                    }),
                    Some(other) => {
                        return Err(usage(format!(
                            "unknown METHOD '{other}'; only 'delete' is understood"
                        )))
                    }
                }
            }
            other => {
                return Err(usage(format!(
                    "a change must be a family name or a hash, not {} ({other})",
                    other.type_name()
                )))
            }
        }
    }
    ctx.backend.admin(AdminRequest::Alter {
        table: table.clone(),
        changes,
    })?;
    let regions = match ctx.backend.admin(AdminRequest::ListRegions { table })? {
        AdminReply::Regions { regions } => regions.len(),
        _ => 0,
    };
    ctx.line("Updating all regions with the new schema...")?;
    ctx.line(format!("{regions}/{regions} regions updated."))?;
    ctx.line("Done.")?;
    Ok(None)
}

fn describe(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let table = table_of(args)?;
    let AdminReply::Table(t) = ctx.backend.admin(AdminRequest::Describe { table })? else {
        return Err(ShellError::Other("unexpected reply to describe".into()));
    };
    ctx.line(format!(
        "Table {} is {}",
        t.name,
        if t.enabled { "ENABLED" } else { "DISABLED" }
    ))?;
    ctx.line(&t.name)?;
    ctx.line("COLUMN FAMILIES DESCRIPTION")?;
    for f in &t.families {
        ctx.line(format::family(f))?;
        ctx.line("")?;
    }
    ctx.line(format::rows(t.families.len() as u64))?;
    if !t.indexes.is_empty() {
        ctx.line("INDEXES")?;
        for index in &t.indexes {
            ctx.line(format::index(index))?;
        }
    }
    let families = t.families.iter().map(|f| {
        let options = f.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        (f.name.as_str(), options.collect())
    });
    for w in format::schema_warnings(&t.name, families) {
        ctx.line(w)?;
    }
    Ok(None)
}

/// A table's index by name, from `describe`.
fn index_named(ctx: &mut Ctx<'_>, table: &str, name: &str) -> ShellResult<IndexDescriptor> {
    let AdminReply::Table(t) = ctx.backend.admin(AdminRequest::Describe {
        table: table.to_string(),
    })?
    else {
        return Err(ShellError::Other("unexpected reply to describe".into()));
    };
    t.indexes
        .into_iter()
        .find(|i| i.name == name)
        .ok_or_else(|| usage(format!("table {table} has no index named '{name}'")))
}

/// One value or several (`'b1'` or `['b1', '2024']`): the leading
/// indexed values an index scan's bounds name.
fn index_values_of(arg: &Arg, what: &str) -> ShellResult<Vec<Bytes>> {
    match arg {
        Arg::Array(items) => items.iter().map(|v| value_of(v, what)).collect(),
        other => Ok(vec![value_of(other, what)?]),
    }
}

/// Turns a scan's STARTROW, STOPROW and ROWPREFIXFILTER into index keys:
/// they name indexed values (one, or several leading ones as an array),
/// and the keys sort by those values as the index orders them.
fn index_bounds(
    ctx: &mut Ctx<'_>,
    table: &str,
    name: &str,
    spec: &mut ReadSpec,
    options: Option<&Arg>,
) -> ShellResult<()> {
    let index = index_named(ctx, table, name)?;
    let Some(options) = options else {
        return Ok(());
    };
    for (k, v) in hash_of(options)? {
        let key = |values: Vec<Bytes>, exact: bool| -> ShellResult<Bytes> {
            let borrowed: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
            let key = if exact {
                index.equal_prefix(&borrowed)
            } else {
                index.bound(&borrowed)
            };
            key.map_err(|e| usage(e.to_string()))
        };
        match k.as_str() {
            "STARTROW" => spec.start_row = key(index_values_of(&v, "STARTROW")?, false)?,
            "STOPROW" | "ENDROW" => spec.stop_row = key(index_values_of(&v, "STOPROW")?, false)?,
            "ROWPREFIXFILTER" => {
                spec.prefix = Some(key(index_values_of(&v, "ROWPREFIXFILTER")?, true)?)
            }
            _ => {}
        }
    }
    Ok(())
}

/// `COLUMNS => [...]` of `create_index`: `family:qualifier`, optionally
/// followed by `/TRANSFORM`.
fn index_column_of(arg: &Arg) -> ShellResult<IndexColumn> {
    let text = text_of(arg, "an indexed column")?;
    let (column, transform) = match text.rsplit_once('/') {
        Some((column, transform)) => (column, IndexTransform::parse(transform)?),
        None => (text.as_str(), IndexTransform::None),
    };
    let (family, qualifier) = family_and_qualifier(column)?;
    Ok(IndexColumn::new(family, qualifier).transform(transform))
}

fn family_and_qualifier(column: &str) -> ShellResult<(Bytes, Bytes)> {
    match Column::parse(column.as_bytes()) {
        Column::Qualified(family, qualifier) => Ok((family, qualifier)),
        Column::Family(_) => Err(usage(format!(
            "'{column}' names a family; an index names columns as 'family:qualifier'"
        ))),
    }
}

fn create_index(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 3, 3)?;
    let table = table_of(args)?;
    let name = text_of(&args[1], "the index name")?;
    let mut columns = Vec::new();
    let mut covered = Vec::new();
    for (k, v) in hash_of(&args[2])? {
        let items = match v {
            Arg::Array(items) => items,
            one => vec![one],
        };
        match k.as_str() {
            "COLUMNS" | "COLUMN" => {
                for item in &items {
                    columns.push(index_column_of(item)?);
                }
            }
            "COVER" | "INCLUDE" => {
                for item in &items {
                    covered.push(family_and_qualifier(&text_of(item, "a covered column")?)?);
                }
            }
            other => return Err(unknown_key(other, &["COLUMNS", "COVER"])),
        }
    }
    let mut index = IndexDescriptor::new(name.clone(), columns);
    index.covered = covered;
    let reply = ctx
        .backend
        .admin(AdminRequest::CreateIndex { table, index })?;
    if let AdminReply::IndexBuilt { rows } = reply {
        ctx.line(format!("Index {name} built: {rows} row(s) indexed"))?;
    }
    Ok(None)
}

fn drop_index(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 2)?;
    let table = table_of(args)?;
    let name = text_of(&args[1], "the index name")?;
    ctx.backend.admin(AdminRequest::DropIndex { table, name })?;
    Ok(None)
}

fn disable(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    ctx.backend.set_enabled(&table_of(args)?, false)?;
    Ok(None)
}

fn enable(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    ctx.backend.set_enabled(&table_of(args)?, true)?;
    Ok(None)
}

fn is_enabled(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let enabled = ctx.backend.is_enabled(&table_of(args)?)?;
    ctx.line(enabled.to_string())?;
    Ok(Some(enabled.to_string()))
}

fn is_disabled(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let disabled = !ctx.backend.is_enabled(&table_of(args)?)?;
    ctx.line(disabled.to_string())?;
    Ok(Some(disabled.to_string()))
}

fn drop(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    ctx.backend.drop_table(&table_of(args)?)?;
    Ok(None)
}

fn exists(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let table = table_of(args)?;
    let exists = ctx.backend.exists(&table)?;
    ctx.line(format!(
        "Table {table} {} exist",
        if exists { "does" } else { "does not" }
    ))?;
    Ok(Some(exists.to_string()))
}

/// The optional whole-name regular expression of `list` and
/// `list_namespace`.
fn name_pattern(args: &[Arg]) -> ShellResult<Option<regex::Regex>> {
    let Some(a) = args.first() else {
        return Ok(None);
    };
    let text = text_of(a, "the regular expression")?;
    regex::Regex::new(&format!("^(?:{text})$"))
        .map(Some)
        .map_err(|e| {
            // The regex crate's message spans lines; its last says what is wrong.
            let message = e.to_string();
            let reason = message.lines().last().unwrap_or_default().to_string();
            usage(format!("bad regular expression '{text}': {reason}"))
        })
}

fn list(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let pattern = name_pattern(args)?;
    let names: Vec<String> = ctx
        .backend
        .list_tables()?
        .into_iter()
        .filter(|n| pattern.as_ref().is_none_or(|p| p.is_match(n)))
        .collect();
    name_list(ctx, "TABLE", &names)
}

fn list_regions(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let table = table_of(args)?;
    let AdminReply::Regions { regions } = ctx.backend.admin(AdminRequest::ListRegions { table })?
    else {
        return Err(ShellError::Other("unexpected reply to list_regions".into()));
    };
    // The STATE column appears only when some region is not OPEN, so the
    // usual listing keeps HBase's look.
    let any_failed = regions.iter().any(|r| r.state != "OPEN");
    let rows: Vec<Vec<String>> = regions
        .iter()
        .map(|r| {
            let mut row = vec![
                format::binary(&r.name),
                format::binary(&r.start_key),
                format::binary(&r.end_key),
                (r.store_file_bytes / (1024 * 1024)).to_string(),
                (r.read_requests + r.write_requests).to_string(),
            ];
            if any_failed {
                row.push(r.state.clone());
            }
            row
        })
        .collect();
    let mut headers = vec!["REGION_NAME", "START_KEY", "END_KEY", "SIZE", "REQ"];
    if any_failed {
        headers.push("STATE");
    }
    for l in format::grid(&headers, &rows) {
        ctx.line(l)?;
    }
    ctx.line(format!(" {} rows", regions.len()))?;
    // One process serves every region today: its gateways reach them all.
    // (HBase prints a SERVER_NAME column; a server here is its ports.)
    if let AdminReply::Status(s) = ctx.backend.admin(AdminRequest::Status)? {
        ctx.line(format!(" served by {}", gateways_line(&s.gateways)))?;
    }
    for r in regions.iter().filter(|r| r.state != "OPEN") {
        ctx.line(format!(
            " {} {}: {}",
            r.encoded_name,
            r.state,
            r.state_reason.as_deref().unwrap_or("")
        ))?;
    }
    Ok(None)
}

fn get_splits(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let table = table_of(args)?;
    let AdminReply::Splits { keys } = ctx.backend.admin(AdminRequest::GetSplits { table })? else {
        return Err(ShellError::Other("unexpected reply to get_splits".into()));
    };
    ctx.line(format!("Total number of splits = {}", keys.len() + 1))?;
    for k in &keys {
        ctx.line(format::binary(k))?;
    }
    Ok(Some(format::ruby_array(keys.iter().map(|k| &k[..]))))
}

// ---- dml ----

fn put(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 4, 5)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let column = bytes_of(&args[2], "the column")?;
    let value = value_of(&args[3], "the value")?;
    let ts = args
        .get(4)
        .map(|a| int_of(a, "the timestamp"))
        .transpose()?;
    ctx.backend.put(&table, &row, &column, &value, ts)?;
    Ok(None)
}

/// The successor of a row key in key order: the row itself is the only key
/// in `[row, row + \x00)`.
fn single_row(row: &[u8]) -> Bytes {
    let mut stop = row.to_vec();
    stop.push(0);
    Bytes::from(stop)
}

fn get(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, usize::MAX)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let mut spec = ReadSpec {
        start_row: row.clone(),
        stop_row: single_row(&row),
        ..ReadSpec::default()
    };
    for arg in &args[2..] {
        match arg {
            Arg::Hash(_) => {
                for (k, v) in hash_of(arg)? {
                    match k.as_str() {
                        "COLUMN" | "COLUMNS" => spec.columns.extend(columns_of(&v)?),
                        "TIMESTAMP" => spec.time_range = Some(exact_timestamp(&v)?),
                        "TIMERANGE" => spec.time_range = Some(time_range_of(&v)?),
                        "VERSIONS" => {
                            spec.versions =
                                Some(u32::try_from(count_of(&v, "VERSIONS")?).unwrap_or(u32::MAX))
                        }
                        "FILTER" => spec.filter = Some(text_of(&v, "FILTER")?),
                        other => {
                            return Err(unknown_key(
                                other,
                                &[
                                    "COLUMN",
                                    "COLUMNS",
                                    "TIMESTAMP",
                                    "TIMERANGE",
                                    "VERSIONS",
                                    "FILTER",
                                ],
                            ))
                        }
                    }
                }
            }
            other => spec.columns.extend(columns_of(other)?),
        }
    }
    let mut cells = Vec::new();
    ctx.backend.read(&table, &spec, 1, &mut |r: RowReply| {
        cells.extend(r.cells);
        true
    })?;
    ctx.line(format::header("COLUMN", "CELL"))?;
    for c in &cells {
        let name = format!(
            "{}:{}",
            format::binary(&c.family),
            format::binary(&c.qualifier)
        );
        ctx.line(format::two_columns(&name, &format::get_cell(c)))?;
    }
    ctx.line(format::rows(cells.len() as u64))?;
    Ok(None)
}

fn scan(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 2)?;
    let table = table_of(args)?;
    let mut spec = ReadSpec::default();
    let mut cache = 100;
    if let Some(arg) = args.get(1) {
        let options = hash_of(arg)?;
        // Through an index the bounds name indexed values (`index_bounds`).
        let by_index = options.iter().any(|(k, _)| k == "INDEX");
        for (k, v) in options {
            match k.as_str() {
                "STARTROW" | "STOPROW" | "ENDROW" | "ROWPREFIXFILTER" if by_index => {}
                "COLUMNS" | "COLUMN" => spec.columns.extend(columns_of(&v)?),
                "STARTROW" => spec.start_row = bytes_of(&v, "STARTROW")?,
                "STOPROW" | "ENDROW" => spec.stop_row = bytes_of(&v, "STOPROW")?,
                "ROWPREFIXFILTER" => spec.prefix = Some(bytes_of(&v, "ROWPREFIXFILTER")?),
                "LIMIT" => spec.limit = Some(count_of(&v, "LIMIT")?),
                "FILTER" => spec.filter = Some(text_of(&v, "FILTER")?),
                "TIMERANGE" => spec.time_range = Some(time_range_of(&v)?),
                "TIMESTAMP" => spec.time_range = Some(exact_timestamp(&v)?),
                "VERSIONS" => {
                    spec.versions =
                        Some(u32::try_from(count_of(&v, "VERSIONS")?).unwrap_or(u32::MAX))
                }
                "REVERSED" => spec.reversed = bool_of(&v, "REVERSED")?,
                "RAW" => spec.raw = bool_of(&v, "RAW")?,
                "CACHE" => cache = count_of(&v, "CACHE")?,
                "CACHE_BLOCKS" => {
                    bool_of(&v, "CACHE_BLOCKS")?;
                }
                "INDEX" => spec.index = Some(text_of(&v, "INDEX")?),
                other => {
                    return Err(unknown_key(
                        other,
                        &[
                            "COLUMNS",
                            "STARTROW",
                            "STOPROW",
                            "ROWPREFIXFILTER",
                            "LIMIT",
                            "FILTER",
                            "TIMERANGE",
                            "TIMESTAMP",
                            "VERSIONS",
                            "REVERSED",
                            "RAW",
                            "CACHE",
                            "CACHE_BLOCKS",
                            "INDEX",
                        ],
                    ))
                }
            }
        }
    }
    if let Some(index) = spec.index.clone() {
        index_bounds(ctx, &table, &index, &mut spec, args.get(1))?;
    }
    // The header waits for the first row so that a failing scan prints
    // only its error.
    let header = format::header("ROW", "COLUMN+CELL");
    let mut rows = 0u64;
    let mut failed = None;
    let out = &mut *ctx.out;
    ctx.backend.read(&table, &spec, cache, &mut |r: RowReply| {
        if rows == 0 {
            if let Err(e) = writeln!(out, "{header}") {
                failed = Some(e);
                return false;
            }
        }
        rows += 1;
        let key = format::binary(&r.row);
        for c in &r.cells {
            if let Err(e) = writeln!(out, "{}", format::two_columns(&key, &format::scan_cell(c))) {
                failed = Some(e);
                return false;
            }
        }
        true
    })?;
    if let Some(e) = failed {
        return Err(ShellError::Other(format!("cannot write output: {e}")));
    }
    if rows == 0 {
        ctx.line(header)?;
    }
    ctx.line(format::rows(rows))?;
    Ok(None)
}

fn count(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 2)?;
    let table = table_of(args)?;
    let mut interval = 1000u64;
    let mut cache = 10usize;
    let mut spec = ReadSpec::default();
    if let Some(arg) = args.get(1) {
        for (k, v) in hash_of(arg)? {
            match k.as_str() {
                "INTERVAL" => interval = count_of(&v, "INTERVAL")? as u64,
                "CACHE" => cache = count_of(&v, "CACHE")?,
                "FILTER" => spec.filter = Some(text_of(&v, "FILTER")?),
                other => return Err(unknown_key(other, &["INTERVAL", "CACHE", "FILTER"])),
            }
        }
    }
    if spec.filter.is_none() {
        // Only the row keys matter: one cell per row is enough.
        spec.filter = Some("FirstKeyOnlyFilter()".into());
    }
    let mut rows = 0u64;
    let mut failed = None;
    let out = &mut *ctx.out;
    ctx.backend.read(&table, &spec, cache, &mut |r: RowReply| {
        rows += 1;
        if rows.is_multiple_of(interval) {
            if let Err(e) = writeln!(
                out,
                "Current count: {rows}, row: {}",
                format::binary(&r.row)
            ) {
                failed = Some(e);
                return false;
            }
        }
        true
    })?;
    if let Some(e) = failed {
        return Err(ShellError::Other(format!("cannot write output: {e}")));
    }
    ctx.line(format::rows(rows))?;
    Ok(Some(rows.to_string()))
}

fn delete(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 3, 4)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let column = bytes_of(&args[2], "the column")?;
    let ts = args
        .get(3)
        .map(|a| int_of(a, "the timestamp"))
        .transpose()?;
    ctx.backend.delete_column(&table, &row, &column, ts)?;
    Ok(None)
}

fn deleteall(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 4)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let ts = args
        .get(3)
        .map(|a| int_of(a, "the timestamp"))
        .transpose()?;
    match args.get(2) {
        None => ctx.backend.delete_row(&table, &row, ts)?,
        Some(c) => {
            let column = bytes_of(c, "the column")?;
            ctx.backend.delete_column(&table, &row, &column, ts)?;
        }
    }
    Ok(None)
}

fn incr(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 3, 4)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let column = bytes_of(&args[2], "the column")?;
    let delta = args
        .get(3)
        .map(|a| int_of(a, "the increment"))
        .transpose()?;
    let value = ctx
        .backend
        .increment(&table, &row, &column, delta.unwrap_or(1))?;
    ctx.line(format!("COUNTER VALUE = {value}"))?;
    Ok(None)
}

fn get_counter(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 3, 3)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let column = bytes_of(&args[2], "the column")?;
    let spec = ReadSpec {
        start_row: row.clone(),
        stop_row: single_row(&row),
        columns: vec![column],
        ..ReadSpec::default()
    };
    let mut value = None;
    ctx.backend.read(&table, &spec, 1, &mut |r: RowReply| {
        value = r.cells.into_iter().next().map(|c| c.value);
        false
    })?;
    match value {
        None => ctx.line("No counter found at specified coordinates")?,
        Some(v) => {
            let bytes: [u8; 8] = v[..].try_into().map_err(|_| {
                ShellError::Other(format!(
                    "the cell holds {} bytes, not an 8-byte counter",
                    v.len()
                ))
            })?;
            ctx.line(format!("COUNTER VALUE = {}", i64::from_be_bytes(bytes)))?;
        }
    }
    Ok(None)
}

fn append(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 4, 4)?;
    let table = table_of(args)?;
    let row = bytes_of(&args[1], "the row")?;
    let column = bytes_of(&args[2], "the column")?;
    let value = value_of(&args[3], "the value")?;
    let current = ctx.backend.append(&table, &row, &column, &value)?;
    ctx.line(format!("CURRENT VALUE = {}", format::binary(&current)))?;
    Ok(None)
}

/// HBase's shell `truncate`: disables the table if it is enabled, then
/// truncates it into one region (it comes back enabled).
fn truncate(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    truncate_with(ctx, args, false)
}

/// `truncate_preserve`: the same, keeping the region boundaries.
fn truncate_preserve(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    truncate_with(ctx, args, true)
}

fn truncate_with(ctx: &mut Ctx<'_>, args: &[Arg], preserve_splits: bool) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let table = table_of(args)?;
    if !ctx.backend.exists(&table)? {
        return Err(ShellError::UnknownTable(table));
    }
    ctx.line(format!("Truncating '{table}' table (it may take a while):"))?;
    if ctx.backend.is_enabled(&table)? {
        ctx.line("Disabling table...")?;
        ctx.backend.set_enabled(&table, false)?;
    }
    ctx.line("Truncating table...")?;
    ctx.backend.admin(AdminRequest::Truncate {
        table,
        preserve_splits,
    })?;
    Ok(None)
}

// ---- tools ----

fn flush(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    ctx.backend.admin(AdminRequest::Flush {
        table: table_of(args)?,
    })?;
    Ok(None)
}

fn compact(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    compaction(ctx, args, false)
}

fn major_compact(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    compaction(ctx, args, true)
}

fn compaction(ctx: &mut Ctx<'_>, args: &[Arg], major: bool) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    ctx.backend.admin(AdminRequest::Compact {
        table: table_of(args)?,
        major,
    })?;
    Ok(None)
}

fn split(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 2)?;
    let target = bytes_of(&args[0], "the table or region name")?;
    let key = args
        .get(1)
        .map(|a| bytes_of(a, "the split key"))
        .transpose()?;
    ctx.backend.admin(AdminRequest::Split { target, key })?;
    Ok(None)
}

fn merge_region(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 3)?;
    let region_a = bytes_of(&args[0], "the first region")?;
    let region_b = bytes_of(&args[1], "the second region")?;
    if let Some(force) = args.get(2) {
        // HBase's force flag merges non-adjacent regions; Basalt never does.
        bool_of(force, "force")?;
    }
    ctx.backend
        .admin(AdminRequest::Merge { region_a, region_b })?;
    Ok(None)
}

// ---- cluster tools ----

fn region_of(args: &[Arg]) -> ShellResult<String> {
    match args.first() {
        Some(a) => text_of(a, "the region name"),
        None => Err(usage("the region name is missing")),
    }
}

fn move_region(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 2)?;
    let region = region_of(args)?;
    let server = args
        .get(1)
        .map(|a| text_of(a, "the server name"))
        .transpose()?;
    ctx.backend.admin(AdminRequest::Move { region, server })?;
    Ok(None)
}

fn assign(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let region = region_of(args)?;
    ctx.backend.admin(AdminRequest::Assign { region })?;
    Ok(None)
}

fn unassign(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    // HBase's optional force flag: Basalt's unassign always closes.
    arity(args, 1, 2)?;
    let region = region_of(args)?;
    if let Some(force) = args.get(1) {
        bool_of(force, "force")?;
    }
    ctx.backend.admin(AdminRequest::Unassign { region })?;
    Ok(None)
}

fn balancer(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let force = match args.first() {
        None => false,
        Some(arg) if text_of(arg, "the argument")? == "force" => true,
        Some(other) => return Err(usage(format!("balancer takes only 'force', not {other}"))),
    };
    let (moved, ran, reason) = match ctx.backend.admin(AdminRequest::Balance { force })? {
        AdminReply::Balanced { moved, ran, reason } => (moved, ran, reason),
        _ => return Err(ShellError::Other("unexpected reply to balance".into())),
    };
    if ran {
        ctx.line(format!("{moved} region(s) moved"))?;
    } else if let Some(reason) = reason {
        ctx.line(format!("the balancer did not run: {reason}"))?;
    }
    Ok(Some(ran.to_string()))
}

fn balance_switch(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let on = bool_of(&args[0], "the balancer switch")?;
    match ctx.backend.admin(AdminRequest::BalanceSwitch { on })? {
        AdminReply::Switch { previous } => {
            ctx.line(format!("Previous balancer state : {previous}"))?;
            Ok(Some(previous.to_string()))
        }
        _ => Err(ShellError::Other(
            "unexpected reply to balance_switch".into(),
        )),
    }
}

fn balancer_enabled(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 0)?;
    match ctx.backend.admin(AdminRequest::BalancerEnabled)? {
        AdminReply::Switch { previous } => Ok(Some(previous.to_string())),
        _ => Err(ShellError::Other(
            "unexpected reply to balancer_enabled".into(),
        )),
    }
}

fn normalize(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 0)?;
    let run = match ctx.backend.admin(AdminRequest::Normalize)? {
        AdminReply::Normalized(run) => run,
        _ => return Err(ShellError::Other("unexpected reply to normalize".into())),
    };
    if run.ran {
        for plan in &run.plans {
            ctx.line(plan.reason())?;
        }
        ctx.line(format!(
            "{} plan(s) carried out, {} failed",
            run.plans.len(),
            run.failed
        ))?;
    } else if let Some(reason) = &run.reason {
        ctx.line(format!("the normalizer did not run: {reason}"))?;
    }
    Ok(Some(run.ran.to_string()))
}

fn normalizer_switch(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let on = bool_of(&args[0], "the normalizer switch")?;
    match ctx.backend.admin(AdminRequest::NormalizerSwitch { on })? {
        AdminReply::Switch { previous } => {
            ctx.line(format!("Previous normalizer state : {previous}"))?;
            Ok(Some(previous.to_string()))
        }
        _ => Err(ShellError::Other(
            "unexpected reply to normalizer_switch".into(),
        )),
    }
}

fn normalizer_enabled(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 0)?;
    match ctx.backend.admin(AdminRequest::NormalizerEnabled)? {
        AdminReply::Switch { previous } => Ok(Some(previous.to_string())),
        _ => Err(ShellError::Other(
            "unexpected reply to normalizer_enabled".into(),
        )),
    }
}

// ---- snapshots ----

fn snapshot(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 3)?;
    let table = table_of(args)?;
    let name = text_of(&args[1], "the snapshot name")?;
    let (mut skip_flush, mut ttl_secs) = (false, 0);
    if let Some(options) = args.get(2) {
        for (key, value) in hash_of(options)? {
            match key.as_str() {
                "SKIP_FLUSH" => skip_flush = bool_of(&value, "SKIP_FLUSH")?,
                "TTL" => ttl_secs = int_of(&value, "TTL")?,
                other => return Err(unknown_key(other, &["SKIP_FLUSH", "TTL"])),
            }
        }
    }
    ctx.backend.admin(AdminRequest::Snapshot {
        table,
        name,
        skip_flush,
        ttl_secs,
        // The shell runs each command once: nothing to recognize again.
        nonce: None,
    })?;
    Ok(None)
}

fn list_snapshots(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let pattern = match args.first() {
        Some(a) => Some(text_of(a, "the regular expression")?),
        None => None,
    };
    let AdminReply::Snapshots { snapshots } =
        ctx.backend.admin(AdminRequest::ListSnapshots { pattern })?
    else {
        return Err(ShellError::Other(
            "unexpected reply to list_snapshots".into(),
        ));
    };
    ctx.line(format::header(
        "SNAPSHOT",
        "TABLE + CREATION TIME + TTL(Sec)",
    ))?;
    for s in &snapshots {
        let ttl = if s.ttl_secs > 0 {
            s.ttl_secs.to_string()
        } else {
            "FOREVER".to_string()
        };
        ctx.line(format::two_columns(
            &s.name,
            &format!("{} ({}) {ttl}", s.table, utc_time(s.created_ms)),
        ))?;
    }
    ctx.line(format::rows(snapshots.len() as u64))?;
    Ok(Some(format::ruby_array(
        snapshots.iter().map(|s| s.name.as_bytes()),
    )))
}

/// `YYYY-MM-DD hh:mm:ss UTC` of a time in milliseconds since the epoch.
fn utc_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (the proleptic Gregorian calendar), by eras of
    // 400 years.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

fn delete_snapshot(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let name = text_of(&args[0], "the snapshot name")?;
    ctx.backend.admin(AdminRequest::DeleteSnapshot { name })?;
    Ok(None)
}

/// HBase's `RESTORE_ACL` option: Basalt keeps no ACLs in snapshots, so
/// `false` is the only value it can honour.
fn acl_options(args: &[Arg], at: usize) -> ShellResult<()> {
    if let Some(options) = args.get(at) {
        for (key, value) in hash_of(options)? {
            match key.as_str() {
                "RESTORE_ACL" if !bool_of(&value, "RESTORE_ACL")? => {}
                "RESTORE_ACL" => {
                    return Err(usage(
                        "RESTORE_ACL => true: Basalt's snapshots carry no ACLs",
                    ))
                }
                other => return Err(unknown_key(other, &["RESTORE_ACL"])),
            }
        }
    }
    Ok(())
}

fn clone_snapshot(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 3)?;
    let name = text_of(&args[0], "the snapshot name")?;
    let table = text_of(&args[1], "the table name")?;
    acl_options(args, 2)?;
    ctx.backend
        .admin(AdminRequest::CloneSnapshot { name, table })?;
    Ok(None)
}

fn restore_snapshot(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 2)?;
    let name = text_of(&args[0], "the snapshot name")?;
    acl_options(args, 1)?;
    ctx.backend.admin(AdminRequest::RestoreSnapshot { name })?;
    Ok(None)
}

fn snapshot_cleanup_switch(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 1)?;
    let on = bool_of(&args[0], "the snapshot cleanup switch")?;
    match ctx
        .backend
        .admin(AdminRequest::SnapshotCleanupSwitch { on })?
    {
        AdminReply::Switch { previous } => {
            ctx.line(format!("Previous snapshot cleanup state : {previous}"))?;
            Ok(Some(previous.to_string()))
        }
        _ => Err(ShellError::Other(
            "unexpected reply to snapshot_cleanup_switch".into(),
        )),
    }
}

fn snapshot_cleanup_enabled(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 0)?;
    match ctx.backend.admin(AdminRequest::SnapshotCleanupEnabled)? {
        AdminReply::Switch { previous } => Ok(Some(previous.to_string())),
        _ => Err(ShellError::Other(
            "unexpected reply to snapshot_cleanup_enabled".into(),
        )),
    }
}

// ---- security ----

/// The scope named by the arguments from `at` on: none is global, an
/// `@name` a namespace, else a table with an optional family and
/// qualifier.
fn scope_of(args: &[Arg], at: usize) -> ShellResult<basalt::Scope> {
    let Some(first) = args.get(at) else {
        return Ok(basalt::Scope::Global);
    };
    let name = text_of(first, "the table or @namespace")?;
    if let Some(namespace) = name.strip_prefix('@') {
        if args.len() > at + 1 {
            return Err(usage("a namespace permission names no family or qualifier"));
        }
        return Ok(basalt::Scope::namespace(namespace));
    }
    let family = args
        .get(at + 1)
        .map(|a| bytes_of(a, "the family"))
        .transpose()?
        .filter(|f| !f.is_empty());
    let qualifier = args
        .get(at + 2)
        .map(|a| bytes_of(a, "the qualifier"))
        .transpose()?
        .filter(|q| !q.is_empty());
    if qualifier.is_some() && family.is_none() {
        return Err(usage("a qualifier needs its family"));
    }
    Ok(basalt::Scope::Table {
        table: name,
        family,
        qualifier,
    })
}

fn grant(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 2, 5)?;
    let principal = text_of(&args[0], "the user")?;
    let letters = text_of(&args[1], "the permissions")?;
    let actions = basalt::Actions::parse(&letters).map_err(|e| usage(e.to_string()))?;
    if actions.is_empty() {
        return Err(usage(format!(
            "Invalid permission: no actions associated with user '{principal}'"
        )));
    }
    let scope = scope_of(args, 2)?;
    // HBase's shell merges a grant into what the user holds there.
    ctx.backend.admin(AdminRequest::ChangePermission {
        change: basalt::PermissionChange::Grant {
            grant: basalt::Grant {
                principal,
                scope,
                actions,
            },
            merge: true,
        },
    })?;
    Ok(None)
}

fn revoke(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 1, 4)?;
    let principal = text_of(&args[0], "the user")?;
    let scope = scope_of(args, 1)?;
    ctx.backend.admin(AdminRequest::ChangePermission {
        change: basalt::PermissionChange::Revoke {
            grant: basalt::Grant {
                principal,
                scope,
                actions: basalt::Actions::NONE,
            },
        },
    })?;
    Ok(None)
}

fn user_permission(ctx: &mut Ctx<'_>, args: &[Arg]) -> ShellResult<Returned> {
    arity(args, 0, 1)?;
    let pattern = args
        .first()
        .map(|a| text_of(a, "the regular expression"))
        .transpose()?;
    let queries: Vec<basalt::PermissionQuery> = match pattern.as_deref() {
        None | Some("") => vec![basalt::PermissionQuery::of(basalt::Scope::Global)],
        Some(pattern) => {
            let (namespaces, wanted) = match pattern.strip_prefix('@') {
                Some(p) => (true, p),
                None => (false, pattern),
            };
            let regex = regex::Regex::new(&format!("^(?:{wanted})$"))
                .map_err(|e| usage(format!("'{wanted}' is not a regular expression: {e}")))?;
            let names = if namespaces {
                namespace_names(ctx)?
            } else {
                ctx.backend.list_tables()?
            };
            names
                .into_iter()
                .filter(|name| regex.is_match(name))
                .map(|name| {
                    basalt::PermissionQuery::of(if namespaces {
                        basalt::Scope::namespace(&name)
                    } else {
                        basalt::Scope::table(&name)
                    })
                })
                .collect()
        }
    };
    let mut all = Vec::new();
    for query in queries {
        let AdminReply::Permissions { grants } =
            ctx.backend.admin(AdminRequest::UserPermissions { query })?
        else {
            return Err(ShellError::Other(
                "unexpected reply to user_permission".into(),
            ));
        };
        all.extend(grants);
    }
    ctx.line(format::header(
        "User",
        "Namespace,Table,Family,Qualifier:Permission",
    ))?;
    for grant in &all {
        ctx.line(format::two_columns(
            &grant.principal,
            &permission_text(grant),
        ))?;
    }
    ctx.line(format::rows(all.len() as u64))?;
    Ok(None)
}

/// Every namespace's name.
fn namespace_names(ctx: &mut Ctx<'_>) -> ShellResult<Vec<String>> {
    match ctx.backend.admin(AdminRequest::ListNamespaces)? {
        AdminReply::Namespaces { namespaces } => {
            Ok(namespaces.into_iter().map(|n| n.name).collect())
        }
        _ => Err(ShellError::Other(
            "unexpected reply to list_namespace".into(),
        )),
    }
}

/// `ns,table,family,qualifier: [Permission: actions=READ,WRITE]`, as
/// HBase's shell prints a grant.
fn permission_text(grant: &basalt::Grant) -> String {
    let lossy = |b: &Option<Bytes>| {
        b.as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let place = match &grant.scope {
        basalt::Scope::Global => ",,,".to_string(),
        basalt::Scope::Namespace { namespace } => format!("{namespace},,,"),
        basalt::Scope::Table {
            table,
            family,
            qualifier,
        } => {
            let (namespace, name) = table.split_once(':').unwrap_or(("default", table));
            format!("{namespace},{name},{},{}", lossy(family), lossy(qualifier))
        }
    };
    let actions: Vec<&str> = grant.actions.iter().map(|a| a.name()).collect();
    format!("{place}: [Permission: actions={}]", actions.join(","))
}
