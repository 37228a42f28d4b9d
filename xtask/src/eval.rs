//! `cargo xtask eval locomo`: retrieval on the LoCoMo dev data, end to end through the real
//! MCP server. Builds `engram` and the `locomo` example (release), brings up the development
//! PostgreSQL (as `cargo xtask serve` does) and recreates the `engram_eval` database in it (or,
//! with `--backend sqlite`, starts from a new file `target/eval/locomo.db`), creates the
//! workspaces `locomo-facts`, `locomo-speakers` and `locomo-turns`, starts `engram serve` on a free port,
//! runs the example against it (which prints the tables and writes
//! `target/eval/locomo-<backend>.json`), then stops the server.
//!
//! The development cluster rather than a throwaway one: it is reused when already running
//! (no `initdb` per run, and a running `cargo xtask serve` keeps working), it cannot collide
//! with the throwaway cluster of a concurrent `cargo xtask test`, and `engram_eval` stays
//! behind after the run for inspection with psql. Only `engram_eval` is touched.

use std::{
    fs::{self, File},
    io::{Read, Write},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, ExitCode, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};

use crate::postgres::{self, Cluster, ClusterConfig};
use crate::{cargo, cmd, target_dir, workspace_root};

/// The database the evaluation runs in; dropped and recreated on every run.
const DATABASE: &str = "engram_eval";
/// The data, relative to the workspace root.
const DEFAULT_DATA: &str = "../shared/data/locomo-dev";
/// The codebase memory set, relative to the workspace root.
const CODEBASE: &str = "xtask/data/codebase-memory.json";
/// The perspectives a new workspace has (`engram_domain::perspectives::DEFAULT_PERSPECTIVES`).
const PERSPECTIVES: [&str; 5] = ["general", "technical", "relational", "temporal", "project"];
/// How long the server may take to answer `/healthz` with 200.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the server may take to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// Options of `cargo xtask eval`.
#[derive(Args)]
pub struct EvalArgs {
    #[command(subcommand)]
    benchmark: Benchmark,
}

#[derive(Subcommand)]
enum Benchmark {
    /// Recall@1/5/10 on LoCoMo (categories 1-4), indexing throughput and query latency.
    Locomo(LocomoArgs),
}

#[derive(Args)]
struct LocomoArgs {
    /// Search mode(s) to evaluate.
    #[arg(long, default_value = "all", value_parser = ["hybrid", "embedding", "text", "all"])]
    mode: String,
    /// How the data maps onto the graph: one entity per fact, one node per speaker, both, or
    /// one entity per message of the dialogue (raw turns).
    #[arg(long, default_value = "both", value_parser = ["facts", "speakers", "turns", "both"])]
    mapping: String,
    /// Use only the first N conversations.
    #[arg(long, value_name = "N")]
    limit_conversations: Option<usize>,
    /// The LoCoMo data (conv-*.json). Default: ../shared/data/locomo-dev from the repo root.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// The store: a private PostgreSQL (database `engram_eval`) or a fresh SQLite file
    /// (`target/eval/locomo.db`).
    #[arg(long, default_value = "pg", value_parser = ["pg", "sqlite"])]
    backend: String,
    /// Also judge each default perspective alone, and all five together (best per node, as
    /// before only `general` was enabled): one more facts workspace each (six in all), each
    /// indexed in full.
    #[arg(long)]
    each_perspective: bool,
    /// Passed on to `engram serve`, e.g. `--embedder ollama`.
    #[arg(last = true, value_name = "SERVE_ARGS")]
    serve_args: Vec<String>,
}

/// Runs `cargo xtask eval …`.
pub fn run(args: &EvalArgs) -> Result<ExitCode> {
    match &args.benchmark {
        Benchmark::Locomo(args) => locomo(args),
    }
}

fn locomo(args: &LocomoArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let data = args
        .data
        .clone()
        .unwrap_or_else(|| workspace_root().join(DEFAULT_DATA));
    if !has_conversations(&data) {
        bail!(
            "no LoCoMo data at {}: expected conv-*.json there (pass --data DIR)",
            data.display()
        );
    }
    let data = data.canonicalize()?;

    cmd::run(cargo().current_dir(workspace_root()).args([
        "build",
        "--release",
        "-p",
        "engram",
        "--bin",
        "engram",
        "--example",
        "locomo",
    ]))?;
    let release = target_dir().join("release");
    let engram = release.join("engram");

    let out_dir = target_dir().join("eval");
    fs::create_dir_all(&out_dir)?;
    let mut cluster = None;
    let url = if args.backend == "sqlite" {
        let file = out_dir.join("locomo.db");
        for suffix in ["", "-wal", "-shm"] {
            let _ = fs::remove_file(out_dir.join(format!("locomo.db{suffix}")));
        }
        println!("engram: evaluating in the SQLite file {}", file.display());
        file.to_string_lossy().into_owned()
    } else {
        let pg = postgres::ensure_installed(&target_dir())?;
        let started = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
        let url = started.fresh_database(&pg, DATABASE)?;
        println!(
            "engram: evaluating in {url} (data in {})",
            started.dir().display()
        );
        cluster = Some(started);
        url
    };
    cmd::output(Command::new(&engram).args(["migrate", "--database-url", &url]))?;
    let engram_cmd = |args: &[&str]| {
        cmd::output(
            Command::new(&engram)
                .args(args)
                .args(["--database-url", &url]),
        )
    };
    for workspace in [
        "locomo-facts",
        "locomo-speakers",
        "locomo-turns",
        "codebase-memory",
    ] {
        engram_cmd(&["workspace", "create", workspace])?;
    }
    let mut perspective_workspaces = Vec::new();
    if args.each_perspective {
        let names = PERSPECTIVES;
        for only in names.iter().map(|&n| Some(n)).chain([None]) {
            let variant = only.unwrap_or("all5");
            for workspace in [
                format!("locomo-p-{variant}"),
                format!("codebase-p-{variant}"),
            ] {
                engram_cmd(&["workspace", "create", &workspace])?;
                for name in &names {
                    let switch = if only.is_none_or(|o| o == *name) {
                        "--enable"
                    } else {
                        "--disable"
                    };
                    engram_cmd(&["workspace", "perspectives", "set", &workspace, name, switch])?;
                }
            }
            perspective_workspaces.push(variant.to_owned());
        }
    }

    let log = out_dir.join("engram-serve.log");
    let port = free_port()?;
    let mut server = Server::start(&engram, &url, port, &args.serve_args, &log)?;
    server.wait_healthy(port, &log)?;
    println!(
        "engram: serving on http://127.0.0.1:{port} (log in {})",
        log.display()
    );

    let mut client = Command::new(release.join("examples").join("locomo"));
    client
        .arg("--url")
        .arg(format!("http://127.0.0.1:{port}"))
        .arg("--data")
        .arg(&data)
        .args(["--mode", &args.mode, "--mapping", &args.mapping])
        .arg("--codebase")
        .arg(workspace_root().join(CODEBASE))
        .arg("--out")
        .arg(out_dir.join(format!("locomo-{}.json", args.backend)));
    if let Some(n) = args.limit_conversations {
        client.args(["--limit-conversations", &n.to_string()]);
    }
    if !perspective_workspaces.is_empty() {
        client
            .arg("--perspective-workspaces")
            .arg(perspective_workspaces.join(","));
    }
    let status = client.status().context("cannot run the locomo example")?;

    drop(server);
    drop(cluster);
    println!(
        "engram: eval took {:.1}s in all",
        started.elapsed().as_secs_f64()
    );
    Ok(cmd::exit_code(status))
}

/// Whether `dir` holds a `conv-*.json`.
fn has_conversations(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("conv-") && name.ends_with(".json")
        })
    })
}

/// A free loopback port (free when asked; the server binds it right after).
pub(crate) fn free_port() -> Result<u16> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}

/// A running `engram serve`; dropping it stops it (SIGTERM, then SIGKILL after a while).
struct Server {
    child: Child,
}

impl Server {
    fn start(engram: &Path, url: &str, port: u16, extra: &[String], log: &Path) -> Result<Self> {
        let output =
            File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let child = Command::new(engram)
            .args([
                "serve",
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--database-url",
                url,
            ])
            .args(extra)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .with_context(|| format!("cannot start {}", engram.display()))?;
        Ok(Self { child })
    }

    /// Waits until `/healthz` answers 200; fails if the server exits or takes too long.
    fn wait_healthy(&mut self, port: u16, log: &Path) -> Result<()> {
        let started = Instant::now();
        loop {
            if get_ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), "/healthz").is_some() {
                return Ok(());
            }
            let tail = || {
                let text = fs::read_to_string(log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(20)..].join("\n")
            };
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "engram serve exited ({status}); end of {}:\n{}",
                    log.display(),
                    tail()
                );
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "engram serve is not healthy after {START_TIMEOUT:?}; end of {}:\n{}",
                    log.display(),
                    tail()
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        if cmd::succeeds(Command::new("kill").args(["-TERM", &pid])) {
            let started = Instant::now();
            while started.elapsed() < STOP_TIMEOUT {
                if let Ok(Some(_)) = self.child.try_wait() {
                    println!("engram: stopped the server");
                    return;
                }
                thread::sleep(Duration::from_millis(100));
            }
        }
        eprintln!("engram: the server did not stop on SIGTERM; killing it");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` at `address` over one HTTP/1.1 connection: the answer's body when it is 200.
pub(crate) fn get_ok(address: SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}
