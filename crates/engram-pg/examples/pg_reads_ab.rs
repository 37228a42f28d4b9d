//! A/B of default reads at 100,000 observations on PostgreSQL: the same workload on two
//! commits. `cargo run --release -p engram-pg --example pg_reads_ab -- EMPTY_DATABASE_URL`
use std::sync::Arc;

use engram_pg::PgStore;

include!("../../engram-sqlite/examples/ab/workload.rs");

#[tokio::main]
async fn main() {
    let url = std::env::args().nth(1).expect("an empty database's URL");
    let store = PgStore::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    reads_ab(Memory::new(Arc::new(store))).await;
}
