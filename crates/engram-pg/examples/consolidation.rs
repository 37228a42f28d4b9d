//! Benchmark: `get_consolidation_report` on a workspace of N nodes (default 10,000) on
//! PostgreSQL, run by `cargo xtask bench` (or by hand against any database it may fill):
//!
//! ```text
//! cargo run --release -p engram-pg --example consolidation -- \
//!     --database-url postgres://postgres@127.0.0.1:5433/engram_bench --nodes 10000
//! ```
//!
//! With `--suggestions` it runs the "did you mean" workload instead
//! (`engram_domain::testsuite::suggestions_benchmark`).
//!
//! The workload is `engram_domain::testsuite::consolidation_benchmark`'s, shared with
//! engram-sqlite's `sqlite_consolidation`.

use std::sync::Arc;

use engram_domain::testsuite::{
    consolidation_benchmark, over_time_benchmark, suggestions_benchmark,
};
use engram_pg::PgStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut url, mut nodes, mut suggestions, mut over_time) = (None, 10_000_usize, false, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--database-url" => url = args.next(),
            "--nodes" => nodes = args.next().unwrap_or_default().parse()?,
            "--suggestions" => suggestions = true,
            "--over-time" => over_time = true,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let url = url.ok_or_else(|| anyhow::anyhow!("--database-url is required"))?;
    let store = PgStore::connect(&url).await?;
    store.migrate().await?;
    if over_time {
        over_time_benchmark(Arc::new(store), nodes).await?;
    } else if suggestions {
        suggestions_benchmark(Arc::new(store), nodes).await?;
    } else {
        consolidation_benchmark(Arc::new(store), nodes).await?;
    }
    Ok(())
}
