//! A/B of default reads at 100,000 observations on SQLite: the same workload on two commits.
//! `cargo run --release -p engram-sqlite --example reads_ab -- NEW_FILE`
use std::sync::Arc;

use engram_sqlite::SqliteStore;

include!("ab/workload.rs");

#[tokio::main]
async fn main() {
    let path = std::env::args().nth(1).expect("a new database path");
    reads_ab(Memory::new(Arc::new(
        SqliteStore::open(&path).await.unwrap(),
    )))
    .await;
}
