//! A first look at Basalt as an embedded library: opens `./basalt-data`
//! (or the directory given as the first argument), creates a table if
//! needed, writes, reads, scans, counts and filters.
//!
//! Run with `cargo run --release -p basalt --example quickstart`.

use basalt::{
    ColumnFamilyDescriptor, Database, Delete, Filter, Get, Put, Result, Scan, TableDescriptor,
};

fn main() -> Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "basalt-data".to_string());
    let db = Database::open(&dir)?;
    println!("opened {dir} ({} tables)", db.list_tables().len());
    if !db.table_exists("users") {
        db.create_table(
            TableDescriptor::new("users")
                .family(ColumnFamilyDescriptor::new("info").max_versions(3))
                .family(ColumnFamilyDescriptor::new("stats")),
        )?;
        println!("created table 'users'");
    }
    let users = db.table("users")?;
    for (name, city) in [("alice", "paris"), ("bob", "oslo"), ("carol", "paris")] {
        users.put(&Put::new(name).add("info", "city", city))?;
    }
    let visits = users.increment_column("alice", "stats", "visits", 1)?;
    println!("alice has visited {visits} time(s)");

    let alice = users.get(&Get::new("alice"))?;
    for cell in &alice.cells {
        println!("{cell:?}");
    }

    let parisians = Filter::parse("SingleColumnValueFilter('info', 'city', =, 'binary:paris')")?;
    let names: Vec<String> = users
        .scan(&Scan::new().filter(parisians))?
        .map(|row| row.map(|r| String::from_utf8_lossy(&r.row).into_owned()))
        .collect::<Result<_>>()?;
    println!("in paris: {names:?}");

    users.delete(&Delete::new("bob"))?;
    let remaining = users.scan(&Scan::new())?.count();
    println!("{remaining} row(s) after deleting bob");
    db.close()
}
