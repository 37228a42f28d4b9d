//! `cargo xtask bench peers [--peers]`: the same MCP workload (the `bench` example of the
//! engram binary, an rmcp client) against engram on SQLite over stdio, engram on PostgreSQL
//! over Streamable HTTP and, with `--peers`, the reference memory server (npm
//! `@modelcontextprotocol/server-memory`) and `mcp-memory` (crates.io), installed under
//! `target/bench/peers` when missing; a peer that cannot be had is skipped with a line saying
//! why. Prints a table of p50 latencies and write throughput and writes every figure to
//! `target/bench/results.json`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::postgres::{self, Cluster, ClusterConfig};
use crate::{cargo, cmd, target_dir, workspace_root};

/// The reference server's release the figures are for.
const REFERENCE_VERSION: &str = "2026.8.31";
/// mcp-memory's release the figures are for.
const MCP_MEMORY_VERSION: &str = "5.2.1";
/// The database the PostgreSQL run uses in the development cluster (dropped and recreated).
const DATABASE: &str = "engram_bench_peers";

/// One system under test: how the driver reaches it.
struct System {
    name: String,
    /// Driver arguments after `--system NAME`.
    reach: Vec<String>,
    /// Environment for the driver (and so for a stdio server it starts).
    env: Vec<(String, String)>,
    /// A server to stop afterwards.
    server: Option<Child>,
}

/// Runs the peer benchmark; `samples` per call and size.
pub fn run(with_peers: bool, samples: usize) -> Result<()> {
    let root = workspace_root();
    let dir = target_dir().join("bench");
    std::fs::create_dir_all(&dir)?;
    println!("engram: building the release binary and the bench driver …");
    cmd::run(cargo().current_dir(root).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "engram",
        "--bin",
        "engram",
        "--example",
        "bench",
    ]))?;
    let release = target_dir().join("release");
    let engram = release.join("engram");
    let driver = release.join("examples").join("bench");

    let mut systems = Vec::new();
    let sqlite = dir.join("engram-stdio.db");
    remove_sqlite(&sqlite);
    systems.push(System {
        name: "engram (SQLite, stdio)".into(),
        reach: stdio(
            &engram,
            &[
                "--database-url",
                &sqlite.display().to_string(),
                "serve",
                "--stdio",
                "--workspace",
                "bench",
                "--create-workspace",
                "bench",
                "--embedder",
                "none",
            ],
        ),
        env: Vec::new(),
        server: None,
    });
    systems[0].reach.insert(0, "--engram".into());

    let pg = postgres::ensure_installed(&target_dir())?;
    let cluster = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
    let url = cluster.fresh_database(&pg, DATABASE)?;
    let port = crate::eval::free_port()?;
    let server = Command::new(&engram)
        .args([
            "--database-url",
            &url,
            "serve",
            "--bind",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--create-workspace", "bench", "--embedder", "none"])
        .env("ENGRAM_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("starting engram on PostgreSQL")?;
    wait_for_port(port)?;
    systems.push(System {
        name: "engram (PostgreSQL, HTTP)".into(),
        reach: vec![
            "--url".into(),
            format!("http://127.0.0.1:{port}/mcp"),
            "--workspace".into(),
            "bench".into(),
            "--engram".into(),
        ],
        env: Vec::new(),
        server: Some(server),
    });

    if with_peers {
        let peers = dir.join("peers");
        match reference_server(&peers) {
            Ok(script) => {
                let file = dir.join("reference-memory.jsonl");
                let _ = std::fs::remove_file(&file);
                systems.push(System {
                    name: format!("reference server {REFERENCE_VERSION} (Node, JSONL)"),
                    reach: stdio(Path::new("node"), &[&script.display().to_string()]),
                    env: vec![("MEMORY_FILE_PATH".into(), file.display().to_string())],
                    server: None,
                });
            }
            Err(error) => println!("engram: skipping the reference server: {error:#}"),
        }
        match mcp_memory(&peers) {
            Ok(binary) => {
                let file = dir.join("mcp-memory.db");
                remove_sqlite(&file);
                systems.push(System {
                    name: format!("mcp-memory {MCP_MEMORY_VERSION} (Rust, SQLite)"),
                    reach: stdio(
                        &binary,
                        &[
                            "--memory-file",
                            &file.display().to_string(),
                            "--enable-graph-read",
                            "--enable-graph-write",
                        ],
                    ),
                    env: Vec::new(),
                    server: None,
                });
            }
            Err(error) => println!("engram: skipping mcp-memory: {error:#}"),
        }
    }

    let mut reports = Vec::new();
    for system in &mut systems {
        println!("engram: benchmarking {} …", system.name);
        let mut command = Command::new(&driver);
        command
            .args(["--system", &system.name, "--samples", &samples.to_string()])
            .args(&system.reach)
            .envs(system.env.iter().map(|(k, v)| (k, v)))
            .stderr(Stdio::inherit());
        match cmd::output(&mut command) {
            Ok(out) => reports.push(serde_json::from_str::<Value>(&out)?),
            Err(error) => println!("engram: {} failed: {error:#}", system.name),
        }
        if let Some(mut server) = system.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
    drop(cluster);
    let results = dir.join("results.json");
    std::fs::write(&results, serde_json::to_string_pretty(&reports)?)?;
    print!("{}", table(&reports));
    println!("engram: every figure in {}", results.display());
    Ok(())
}

/// Driver arguments that start `program args` over stdio (`--command` takes the rest of the
/// line, so it comes last).
fn stdio(program: &Path, args: &[&str]) -> Vec<String> {
    let mut reach = vec!["--command".to_owned(), program.display().to_string()];
    reach.extend(args.iter().map(|a| (*a).to_owned()));
    reach
}

fn remove_sqlite(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn wait_for_port(port: u16) -> Result<()> {
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    bail!("nothing listens on port {port}")
}

/// The reference server's entry script, installed with npm when missing.
fn reference_server(peers: &Path) -> Result<PathBuf> {
    let script = peers.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    if !script.is_file() {
        anyhow::ensure!(cmd::find_in_path("npm").is_some(), "npm is not installed");
        println!("engram: installing @modelcontextprotocol/server-memory@{REFERENCE_VERSION} …");
        cmd::run(Command::new("npm").args([
            "install",
            "--silent",
            "--prefix",
            &peers.display().to_string(),
            &format!("@modelcontextprotocol/server-memory@{REFERENCE_VERSION}"),
        ]))?;
    }
    anyhow::ensure!(cmd::find_in_path("node").is_some(), "node is not installed");
    Ok(script)
}

/// mcp-memory's binary, built with cargo (without its embedding model) when missing.
fn mcp_memory(peers: &Path) -> Result<PathBuf> {
    let binary = peers.join("bin/mcp-memory");
    if !binary.is_file() {
        println!("engram: building mcp-memory {MCP_MEMORY_VERSION} (several minutes, once) …");
        cmd::run(cargo().args([
            "install",
            "mcp-memory",
            "--version",
            MCP_MEMORY_VERSION,
            "--no-default-features",
            "--locked",
            "--root",
            &peers.display().to_string(),
        ]))?;
    }
    Ok(binary)
}

/// p50 of every call (rows) for every system (columns), and write throughput.
fn table(reports: &[Value]) -> String {
    use std::fmt::Write;
    let mut calls: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r["calls"]
                .as_object()
                .into_iter()
                .flat_map(|c| c.keys().cloned())
        })
        .collect();
    calls.sort();
    calls.dedup();
    let mut out = String::new();
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["system"].as_str().unwrap_or("?"))
        .collect();
    let _ = writeln!(out, "\n| p50 ms (p99) | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(names.len()));
    for call in &calls {
        let cells: Vec<String> = reports
            .iter()
            .map(|r| {
                let c = &r["calls"][call];
                match (c["p50"].as_f64(), c["p99"].as_f64()) {
                    (Some(p50), Some(p99)) => format!("{p50:.2} ({p99:.2})"),
                    _ => "—".into(),
                }
            })
            .collect();
        let _ = writeln!(out, "| {call} | {} |", cells.join(" | "));
    }
    for (label, key) in [
        ("create 1,000 (s)", "1000"),
        ("grow to 10,000 (s)", "10000"),
    ] {
        let cells: Vec<String> = reports
            .iter()
            .map(|r| {
                let seconds = r["create_seconds"][key].as_f64();
                let rate = r["create_observations_per_second"][key].as_f64();
                match (seconds, rate) {
                    (Some(s), Some(rate)) => format!("{s:.2} ({rate:.0} obs/s)"),
                    _ => "—".into(),
                }
            })
            .collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    let mut sized: Vec<String> = (reports.iter())
        .flat_map(|r| (r["result_bytes"].as_object().into_iter()).flat_map(|b| b.keys().cloned()))
        .collect();
    sized.sort();
    sized.dedup();
    for call in &sized {
        let cells: Vec<String> = (reports.iter())
            .map(|r| {
                r["result_bytes"][call]
                    .as_u64()
                    .map_or("—".into(), |b| b.to_string())
            })
            .collect();
        let _ = writeln!(out, "| result bytes: {call} | {} |", cells.join(" | "));
    }
    let cells: Vec<String> = (reports.iter())
        .map(|r| {
            r["initialize_ms"]
                .as_f64()
                .map_or("—".into(), |ms| format!("{ms:.0}"))
        })
        .collect();
    let _ = writeln!(out, "| start to initialize (ms) | {} |", cells.join(" | "));
    let cells: Vec<String> = (reports.iter())
        .map(|r| {
            r["rss_mb"]
                .as_f64()
                .map_or("—".into(), |mb| format!("{mb:.0}"))
        })
        .collect();
    let _ = writeln!(
        out,
        "| resident memory at the end (MB) | {} |",
        cells.join(" | ")
    );
    out
}
