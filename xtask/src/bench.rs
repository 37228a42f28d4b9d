//! `cargo xtask bench`: the figures in BENCHMARKS.md that are not retrieval quality.
//!
//! - `consolidation`: `get_consolidation_report` on a workspace of 10,000 nodes (the
//!   `consolidation` example of engram-pg) in the `engram_bench` database of the development
//!   PostgreSQL (as `cargo xtask eval` uses it: reused when running, only `engram_bench` is
//!   touched);
//!   and the same workload on a SQLite file under `target/bench/` (`sqlite_consolidation`);
//! - `embed`: the local model's throughput (the `throughput` example of engram-embed);
//! - `indexer`: the server's indexer against the raw model on the same texts, as a ratio (the
//!   `indexer_ratio` example of the binary).
//!
//! - `scale` (only when named): every call's cost from 10,000 to 1,000,000 observations on both
//!   stores, with its plot (`crate::scale`).
//!
//! Examples are built in release mode; each prints its own figures.

use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use crate::postgres::{self, Cluster, ClusterConfig};
use crate::{cargo, cmd, target_dir, workspace_root};

/// The database the consolidation benchmark fills; dropped and recreated on every run.
const DATABASE: &str = "engram_bench";

/// Options of `cargo xtask bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Which benchmarks to run (default: all).
    #[arg(value_enum)]
    benchmarks: Vec<Benchmark>,
    /// Nodes in the consolidation benchmark's workspace.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// Sentences the embedding benchmark embeds, and observations the indexer benchmark
    /// indexes.
    #[arg(long, default_value_t = 512)]
    sentences: usize,
    /// Also run the peers (installed under target/bench/peers when missing).
    #[arg(long)]
    peers: bool,
    /// Samples per call and size in the side-by-side benchmark.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Observations at which `scale` measures (it runs only when named).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    sizes: Vec<usize>,
    /// The stores `scale` measures.
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgresql")]
    stores: Vec<String>,
    /// `scale` without an embedder: only the calls that need no vectors, no indexing (for
    /// sizes where PostgreSQL's HNSW indexing would take hours).
    #[arg(long)]
    text_only: bool,
    /// The process counts `processes` measures.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    processes: Vec<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Benchmark {
    /// The consolidation report at scale, on PostgreSQL and on SQLite.
    Consolidation,
    /// The local embedding model's throughput.
    Embed,
    /// "Did you mean" at 100,000 node names: `open_nodes` for names a user almost typed, on
    /// PostgreSQL and on SQLite.
    Suggestions,
    /// The indexer's throughput against the raw model's, on the same texts.
    Indexer,
    /// The MCP calls every memory server has, and engram's own, side by side
    /// (`--peers` adds the reference server and mcp-memory).
    Peers,
    /// The cost of every call from 10,000 to 1,000,000 observations on both stores, with the
    /// plot in docs/scale.png (`--sizes`, `--stores`; only when named: it takes hours).
    Scale,
    /// Memory over time at 100,000 observations: reads now and `as_of`, a history of 1,000
    /// entries, merging two nodes of 1,000 facts, on PostgreSQL and on SQLite.
    OverTime,
    /// Mixed clients against 1, 2 and 4 engram processes on one PostgreSQL database of
    /// 100,000 observations (`--processes`; only when named).
    Processes,
}

/// Runs `cargo xtask bench …`.
pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    if args.benchmarks.contains(&Benchmark::Scale) {
        println!("== scale: every call from the smallest size to the largest");
        crate::scale::run(
            &args.sizes,
            &args.stores,
            args.samples.min(50),
            args.text_only,
        )?;
    }
    if args.benchmarks.contains(&Benchmark::Processes) {
        println!("== processes: one database, several engram processes");
        crate::scale::processes(100_000, &args.processes)?;
    }
    let all = args.benchmarks.is_empty();
    let wanted = |b: Benchmark| all || args.benchmarks.contains(&b);
    if wanted(Benchmark::Embed) {
        println!("== embed: local model throughput");
        example("engram-embed", "throughput", &[&args.sentences.to_string()])?;
    }
    if wanted(Benchmark::Indexer) {
        println!("== indexer: the server's indexer against the raw model");
        example("engram", "indexer_ratio", &[&args.sentences.to_string()])?;
    }
    if wanted(Benchmark::Peers) || args.peers {
        println!("== peers: the shared MCP calls side by side");
        crate::peers::run(args.peers, args.samples)?;
    }
    if wanted(Benchmark::Consolidation) {
        println!(
            "== consolidation: get_consolidation_report over {} nodes",
            args.nodes
        );
        let pg = postgres::ensure_installed(&target_dir())?;
        let cluster = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
        let url = cluster.fresh_database(&pg, DATABASE)?;
        let nodes = args.nodes.to_string();
        example(
            "engram-pg",
            "consolidation",
            &["--database-url", &url, "--nodes", &nodes],
        )?;
        drop(cluster);
        println!("== consolidation: the same on SQLite");
        let dir = target_dir().join("bench");
        std::fs::create_dir_all(&dir)?;
        let file = dir.join("engram-bench.db");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("engram-bench.db{suffix}")));
        }
        let file = file.to_string_lossy();
        example(
            "engram-sqlite",
            "sqlite_consolidation",
            &["--path", &file, "--nodes", &nodes],
        )?;
    }
    if wanted(Benchmark::Suggestions) {
        suggestions()?;
    }
    if wanted(Benchmark::OverTime) {
        over_time()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `cargo xtask bench suggestions`: the "did you mean" workload at 100,000 nodes, on a fresh
/// PostgreSQL database and a fresh SQLite file.
fn suggestions() -> Result<()> {
    const NODES: &str = "100000";
    println!("== suggestions: open_nodes for almost-typed names among {NODES} nodes, PostgreSQL");
    let pg = postgres::ensure_installed(&target_dir())?;
    let cluster = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
    let url = cluster.fresh_database(&pg, DATABASE)?;
    let args = ["--database-url", &url, "--nodes", NODES, "--suggestions"];
    example("engram-pg", "consolidation", &args)?;
    drop(cluster);
    println!("== suggestions: the same on SQLite");
    let dir = target_dir().join("bench");
    std::fs::create_dir_all(&dir)?;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("engram-names.db{suffix}")));
    }
    let file = dir.join("engram-names.db");
    let file = file.to_string_lossy();
    let args = ["--path", &file, "--nodes", NODES, "--suggestions"];
    example("engram-sqlite", "sqlite_consolidation", &args)
}

/// `cargo xtask bench over-time`: the memory-over-time workload at 100,000 observations, on a
/// fresh PostgreSQL database and a fresh SQLite file.
fn over_time() -> Result<()> {
    const OBSERVATIONS: &str = "100000";
    println!("== over-time: as_of reads, history, merge among {OBSERVATIONS} facts, PostgreSQL");
    let pg = postgres::ensure_installed(&target_dir())?;
    let cluster = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
    let url = cluster.fresh_database(&pg, DATABASE)?;
    let args = [
        "--database-url",
        &url,
        "--nodes",
        OBSERVATIONS,
        "--over-time",
    ];
    example("engram-pg", "consolidation", &args)?;
    drop(cluster);
    println!("== over-time: the same on SQLite");
    let dir = target_dir().join("bench");
    std::fs::create_dir_all(&dir)?;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("engram-time.db{suffix}")));
    }
    let file = dir.join("engram-time.db");
    let file = file.to_string_lossy();
    let args = ["--path", &file, "--nodes", OBSERVATIONS, "--over-time"];
    example("engram-sqlite", "sqlite_consolidation", &args)
}

/// Builds and runs `package`'s `example` in release mode with `args`.
fn example(package: &str, example: &str, args: &[&str]) -> Result<()> {
    let started = Instant::now();
    cmd::run(cargo().current_dir(workspace_root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        package,
        "--example",
        example,
    ]))?;
    let binary = target_dir().join("release").join("examples").join(example);
    let status = Command::new(&binary)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    anyhow::ensure!(status.success(), "{example} failed ({status})");
    println!(
        "({example}: {:.1}s with the build)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
