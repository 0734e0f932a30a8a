//! The README's embedded quick start, as a program: `cargo test` compiles
//! it, and `crates/basalt-cli/tests/readme.rs` checks that the README shows
//! exactly this code, so the README's example cannot rot.
//!
//! Run with `cargo run -p basalt --example quickstart [DIR]`. It opens
//! `./basalt-quickstart` (not the server's `./basalt-data`) unless given a
//! directory, and can be run again: the table is created only once.

use basalt::{ColumnFamilyDescriptor, Database, Filter, Get, Put, Result, Scan, TableDescriptor};

fn main() -> Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "basalt-quickstart".into());
    let db = Database::open(&dir)?; // takes an exclusive lock on the directory
    if !db.table_exists("users") {
        db.create_table(
            TableDescriptor::new("users").family(
                ColumnFamilyDescriptor::new("info")
                    .max_versions(3)
                    .ttl_seconds(86_400),
            ),
        )?;
    }
    let users = db.table("users")?;
    users.put(&Put::new("alice").add("info", "email", "alice@example.com"))?;
    users.put(&Put::new("bob").add("info", "email", "bob@example.org"))?;

    let row = users.get(&Get::new("alice").column("info", "email"))?;
    println!("alice's email: {:?}", row.cells[0].value);
    let logins = users.increment_column("alice", "info", "logins", 1)?;
    println!("alice's logins: {logins}");

    let filter = Filter::parse("SingleColumnValueFilter('info', 'email', =, 'substring:.com')")?;
    for row in users.scan(&Scan::new().prefix("a").filter(filter))? {
        println!("matches: {:?}", row?.row);
    }
    db.close()
}
