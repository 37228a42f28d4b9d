//! `cargo xtask cluster`: engram for a team on this one machine, from Debian's packages and
//! the repository's own configuration (`deploy/team/`): a primary PostgreSQL with a streaming
//! replica (`pg_basebackup`), PgBouncer in transaction pooling mode in front of both, two
//! `engram serve` processes (release build) through PgBouncer with a direct connection for
//! migrations and the replica for reads, and HAProxy in front of them. It serves until
//! Ctrl-C. With `--bench` it measures instead: the mixed clients of `cargo xtask bench
//! processes` against one engram process directly on the primary, then through the whole
//! stack, with the CPU each PostgreSQL server spent.

use std::{
    process::{Child, Command, ExitCode, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::Value;

use crate::{
    cmd,
    pgbouncer::PgBouncer,
    postgres::{self, Cluster, ClusterConfig},
    target_dir, workspace_root,
};

/// The workspace the cluster serves.
const WORKSPACE: &str = "team";

/// Options of `cargo xtask cluster`.
#[derive(Args)]
pub struct ClusterArgs {
    /// Where HAProxy listens for MCP clients.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Measure instead of serving: one process direct against the whole stack.
    #[arg(long)]
    bench: bool,
    /// Observations `--bench` loads first.
    #[arg(long, default_value_t = 20_000)]
    observations: usize,
}

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `cargo xtask cluster`.
pub fn run(args: &ClusterArgs) -> Result<ExitCode> {
    let target = target_dir();
    let pg = postgres::ensure_installed(&target)?;
    crate::debian::ensure();
    crate::scale::build()?;
    let engram = target.join("release").join("engram");
    let dir = target.join("engram-team");
    std::fs::create_dir_all(&dir)?;

    let mut reports = Vec::new();
    let primary = Cluster::start(&pg, &ClusterConfig::team(&target))?;
    let primary_url = primary.url();
    println!("engram: primary PostgreSQL at {primary_url}");
    if args.bench {
        // Loaded (with a one-second run) before the replica is made, so that both start with
        // the data; then measured alone.
        cmd::output(
            crate::scale::scale_example(&primary_url, args.observations).args([
                "--processes",
                "1",
                "--seconds",
                "1",
            ]),
        )?;
        let report = run_scale(&primary, &primary, &primary_url, args.observations, &[])?;
        print_run("one process, direct", &report);
        reports.push(("direct", report));
    } else {
        cmd::run(
            Command::new(&engram)
                .args(["--database-url", &primary_url])
                .args(["workspace", "create", WORKSPACE]),
        )?;
    }
    let replica = primary.replica(&ClusterConfig::team_replica(&target))?;
    println!("engram: streaming replica at {}", replica.url());
    let bouncer = PgBouncer::for_team(&primary, &replica, &primary.dir().join("pgbouncer"))?;
    println!(
        "engram: PgBouncer (transaction pooling) at {}",
        bouncer.url("engram")
    );

    let mut servers = Vec::new();
    let mut metrics = Vec::new();
    for name in ["a", "b"] {
        let port = crate::eval::free_port()?;
        let metrics_address = format!("127.0.0.1:{}", crate::eval::free_port()?);
        let log = std::fs::File::create(dir.join(format!("engram-{name}.log")))?;
        let child = Command::new(&engram)
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--database-url", &bouncer.url("engram")])
            .args(["--database-direct-url", &primary_url])
            .args(["--read-replica-url", &bouncer.url("engram_replica")])
            .args(["--embedder", "none", "--drain", "5s"])
            .args(["--metrics-bind", &metrics_address])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting engram serve")?;
        servers.push((Running(child), format!("127.0.0.1:{port}")));
        metrics.push(metrics_address);
    }
    for (_, address) in &servers {
        wait_healthy(address)?;
    }
    println!(
        "engram: engram serve at {} and {} (logs in {})",
        servers[0].1,
        servers[1].1,
        dir.display()
    );
    let haproxy = Running(
        Command::new("/usr/sbin/haproxy")
            .arg("-f")
            .arg(workspace_root().join("deploy/team/haproxy.cfg"))
            .arg("-db")
            .env("ENGRAM_LISTEN", &args.listen)
            .env("ENGRAM_SERVER_A", &servers[0].1)
            .env("ENGRAM_SERVER_B", &servers[1].1)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("haproxy.log"))?)
            .spawn()
            .context("starting haproxy")?,
    );
    wait_healthy(&args.listen)?;
    let base = format!("http://{}", args.listen);
    if args.bench {
        let report = run_scale(
            &primary,
            &replica,
            &primary_url,
            args.observations,
            &[&base],
        )?;
        print_run("two processes, PgBouncer, replica, HAProxy", &report);
        let mut report = report;
        for route in ["replica", "primary_behind", "primary_skipped"] {
            let reads: u64 = metrics
                .iter()
                .map(|address| replica_reads(address, route))
                .sum();
            println!("engram: read-only calls with route {route}: {reads}");
            report[format!("reads_{route}")] = reads.into();
        }
        reports.push(("stack", report));
        let figures = target.join("bench").join("team.json");
        std::fs::create_dir_all(target.join("bench"))?;
        let reports: serde_json::Map<String, Value> = (reports.into_iter())
            .map(|(name, report)| (name.to_owned(), report))
            .collect();
        std::fs::write(&figures, serde_json::to_string_pretty(&reports)?)?;
        println!("figures in {}", figures.display());
    } else {
        println!(
            "engram: serving workspace {WORKSPACE:?} at {base}/mcp (X-Memory-Workspace: \
             {WORKSPACE}); Ctrl-C stops everything"
        );
        let (mut first, _) = servers.remove(0);
        first.0.wait()?;
    }
    drop((haproxy, servers, bouncer, replica));
    Ok(ExitCode::SUCCESS)
}

/// The scale example's mixed clients over `url` (loaded with `observations` unless loaded
/// already), against one process of its own or the `running` servers, and the CPU seconds
/// `primary`'s and `replica`'s servers spent meanwhile (the same when there is no replica).
fn run_scale(
    primary: &Cluster,
    replica: &Cluster,
    url: &str,
    observations: usize,
    running: &[&str],
) -> Result<Value> {
    let mut command = crate::scale::scale_example(url, observations);
    command.arg("--reuse");
    match running {
        [] => command.args(["--processes", "1"]),
        servers => command.arg("--servers").arg(servers.join(",")),
    };
    let same = std::ptr::eq(primary, replica);
    let watches = (CpuWatch::start(primary)?, CpuWatch::start(replica)?);
    let printed = cmd::output(&mut command)?;
    let spent = (watches.0.stop(), watches.1.stop());
    let mut report: Value = serde_json::from_str(printed.trim())
        .with_context(|| format!("the scale example printed {printed}"))?;
    let run = report["throughput"][0].take();
    let searches = run["tools"]["search_nodes"]["samples"]
        .as_f64()
        .unwrap_or(0.0);
    let per_thousand = |seconds: f64| seconds / searches.max(1.0) * 1_000.0;
    let replica_spent = if same { 0.0 } else { spent.1 };
    Ok(serde_json::json!({
        "run": run,
        "primary_cpu_s": spent.0,
        "replica_cpu_s": replica_spent,
        "primary_cpu_s_per_1000_searches": per_thousand(spent.0),
        "replica_cpu_s_per_1000_searches": per_thousand(replica_spent),
    }))
}

fn print_run(what: &str, report: &Value) {
    let run = &report["run"];
    println!(
        "engram: {what}: {} calls/s, p50 {} ms, p99 {} ms; PostgreSQL CPU per 1,000 searches: \
         primary {:.2} s, replica {:.2} s (in all: primary {:.1} s, replica {:.1} s)",
        run["calls_per_second"],
        run["all"]["p50"],
        run["all"]["p99"],
        report["primary_cpu_s_per_1000_searches"]
            .as_f64()
            .unwrap_or(0.0),
        report["replica_cpu_s_per_1000_searches"]
            .as_f64()
            .unwrap_or(0.0),
        report["primary_cpu_s"].as_f64().unwrap_or(0.0),
        report["replica_cpu_s"].as_f64().unwrap_or(0.0),
    );
}

/// CPU seconds (user and system) that a cluster's server and its backends spend while it is
/// watched: `/proc` read every 100 ms, so that backends which exit before the end (a direct
/// engram process's connections close with it) still count up to their last reading.
struct CpuWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<f64>,
}

impl CpuWatch {
    fn start(cluster: &Cluster) -> Result<Self> {
        let postmaster = cluster.postmaster_pid().context("the server's pid")?;
        let ticks_per_second: f64 = cmd::output(Command::new("getconf").arg("CLK_TCK"))?
            .trim()
            .parse()
            .unwrap_or(100.0);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let first = ticks_by_process(postmaster);
            let mut last = first.clone();
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                last.extend(ticks_by_process(postmaster));
                std::thread::sleep(Duration::from_millis(100));
            }
            last.extend(ticks_by_process(postmaster));
            let spent: u64 = (last.iter())
                .map(|(pid, ticks)| ticks - first.get(pid).copied().unwrap_or(0))
                .sum();
            spent as f64 / ticks_per_second
        });
        Ok(Self { stop, thread })
    }

    /// The CPU seconds spent since [`CpuWatch::start`].
    fn stop(self) -> f64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(0.0)
    }
}

/// User and system ticks of `postmaster` and each of its children, by process id.
fn ticks_by_process(postmaster: u32) -> std::collections::HashMap<u32, u64> {
    let mut ticks = std::collections::HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return ticks;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, ppid, …, utime (14th), stime.
        let Some((_, fields)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = fields.split(' ').collect();
        let parent: u32 = fields.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        if pid == postmaster || parent == postmaster {
            let field = |index: usize| -> u64 {
                fields.get(index).and_then(|v| v.parse().ok()).unwrap_or(0)
            };
            ticks.insert(pid, field(11) + field(12));
        }
    }
    ticks
}

/// `engram_replica_reads_total{route="ROUTE"}` on the metrics listener at `address`.
fn replica_reads(address: &str, route: &str) -> u64 {
    let page = (address.parse().ok())
        .and_then(|address| crate::eval::get_ok(address, "/metrics"))
        .unwrap_or_default();
    let series = format!("engram_replica_reads_total{{route=\"{route}\"}}");
    page.lines()
        .find_map(|line| line.strip_prefix(&series))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .map_or(0, |value| value as u64)
}

/// Waits up to 60 s for `/healthz` at `address` (`HOST:PORT`) to answer 200.
fn wait_healthy(address: &str) -> Result<()> {
    let socket = address
        .parse()
        .with_context(|| format!("{address} is no HOST:PORT address"))?;
    let started = Instant::now();
    while crate::eval::get_ok(socket, "/healthz").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            bail!("http://{address}/healthz did not answer 200 within 60 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}
