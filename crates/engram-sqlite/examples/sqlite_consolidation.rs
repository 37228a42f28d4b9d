//! Benchmark: `get_consolidation_report` on a workspace of N nodes (default 10,000) on SQLite,
//! the same workload as engram-pg's `consolidation` example, in a new database file:
//!
//! ```text
//! cargo run --release -p engram-sqlite --example sqlite_consolidation -- \
//!     --path /tmp/engram-bench.db --nodes 10000
//! ```
//!
//! With `--suggestions` it runs the "did you mean" workload instead
//! (`engram_domain::testsuite::suggestions_benchmark`).

use std::sync::Arc;

use engram_domain::testsuite::{
    consolidation_benchmark, over_time_benchmark, suggestions_benchmark,
};
use engram_sqlite::SqliteStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut path, mut nodes, mut suggestions, mut over_time) = (None, 10_000_usize, false, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--path" => path = args.next(),
            "--nodes" => nodes = args.next().unwrap_or_default().parse()?,
            "--suggestions" => suggestions = true,
            "--over-time" => over_time = true,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let path = path.ok_or_else(|| anyhow::anyhow!("--path is required"))?;
    if std::path::Path::new(&path).exists() {
        anyhow::bail!("{path} exists; give the path of a new database file");
    }
    let store = SqliteStore::open(&path).await?;
    if over_time {
        over_time_benchmark(Arc::new(store), nodes).await?;
    } else if suggestions {
        suggestions_benchmark(Arc::new(store), nodes).await?;
    } else {
        consolidation_benchmark(Arc::new(store), nodes).await?;
    }
    Ok(())
}
