//! `cargo xtask bench scale`: the cost curve to a million observations. For each store and
//! size, the `scale` example of the binary loads a fresh store (SQLite under `target/bench/`,
//! or the `engram_scale` database of the development PostgreSQL), serves it, waits for the
//! indexer and measures every call; this prints the table, keeps every figure in
//! `target/bench/scale.json`, and draws `docs/scale.png` (matplotlib, in a virtual environment
//! under `target/bench/`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::postgres::{self, Cluster, ClusterConfig};
use crate::{cargo, cmd, target_dir, workspace_root};

/// The database the scale benchmark fills; dropped and recreated for every size.
const DATABASE: &str = "engram_scale";

/// The calls in the table, in its order.
const CALLS: [&str; 18] = [
    "open_nodes",
    "search_nodes hybrid",
    "search_nodes embedding",
    "search_nodes text",
    "search_nodes text, one word",
    "search_observations",
    "get_neighborhood depth 2",
    "get_path",
    "find_all_paths depth 4",
    "get_subgraph 10 nodes depth 1",
    "describe_node",
    "get_relations from a node",
    "get_graph_vocabulary",
    "read_graph first page",
    "read_graph last page",
    "get_stats",
    "find_similar_nodes",
    "get_consolidation_report",
];

/// Runs the scale benchmark at `sizes` (observations) on `stores` (`sqlite`, `postgresql`);
/// with `text_only`, without an embedder (the calls that need no vectors). The figures of
/// earlier runs at other (store, size) pairs stay in `scale.json` and the plot.
pub fn run(sizes: &[usize], stores: &[String], samples: usize, text_only: bool) -> Result<()> {
    build()?;
    let bench = target_dir().join("bench");
    std::fs::create_dir_all(&bench)?;
    let mut runs: Vec<Value> = Vec::new();
    for store in stores {
        let cluster = match store.as_str() {
            "postgresql" => {
                let pg = postgres::ensure_installed(&target_dir())?;
                Some((Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?, pg))
            }
            "sqlite" => None,
            other => anyhow::bail!("unknown store {other:?}: sqlite or postgresql"),
        };
        for &size in sizes {
            let url = match &cluster {
                Some((cluster, pg)) => cluster.fresh_database(pg, DATABASE)?,
                None => {
                    let file = bench.join(format!("scale-{size}.db"));
                    for suffix in ["", "-wal", "-shm", ".serving"] {
                        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
                    }
                    file.display().to_string()
                }
            };
            println!("== scale: {store}, {size} observations");
            let printed = cmd::output(
                scale_example(&url, size)
                    .args(["--samples", &samples.to_string()])
                    .args(text_only.then_some("--text-only")),
            )?;
            let mut run: Value = serde_json::from_str(printed.trim())
                .with_context(|| format!("the scale example printed {printed}"))?;
            if let Some((_, pg)) = &cluster {
                run["disk_bytes"] = database_bytes(pg, &url)?.into();
            }
            println!("{run}");
            runs.push(run);
        }
    }
    let figures = bench.join("scale.json");
    let runs = with_earlier_runs(&figures, runs);
    std::fs::write(&figures, serde_json::to_string_pretty(&runs)?)?;
    println!("{}", table(&runs));
    let plot = workspace_root().join("docs").join("scale.png");
    draw(&figures, &plot)?;
    println!(
        "figures in {}, the plot in {}",
        figures.display(),
        plot.display()
    );
    Ok(())
}

/// `cargo xtask bench processes`: the throughput of mixed clients against 1, 2 and 4 engram
/// processes on one PostgreSQL database of `observations` (the scale example's
/// `--processes`), printed as a table and kept in `target/bench/processes.json`.
pub fn processes(observations: usize, counts: &[usize]) -> Result<()> {
    build()?;
    let pg = postgres::ensure_installed(&target_dir())?;
    let cluster = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
    let url = cluster.fresh_database(&pg, "engram_processes")?;
    let counts: Vec<String> = counts.iter().map(ToString::to_string).collect();
    let printed =
        cmd::output(scale_example(&url, observations).args(["--processes", &counts.join(",")]))?;
    let report: Value = serde_json::from_str(printed.trim())
        .with_context(|| format!("the scale example printed {printed}"))?;
    let figures = target_dir().join("bench").join("processes.json");
    std::fs::write(&figures, serde_json::to_string_pretty(&report)?)?;
    println!(
        "| processes | calls/s | p50 / p99 ms | search_nodes text p50 | add_observations p50 |"
    );
    println!("|---|---|---|---|---|");
    for run in report["throughput"].as_array().into_iter().flatten() {
        println!(
            "| {} | {} | {} / {} | {} | {} |",
            run["processes"],
            thousands(&run["calls_per_second"]),
            run["all"]["p50"],
            run["all"]["p99"],
            run["tools"]["search_nodes"]["p50"],
            run["tools"]["add_observations"]["p50"],
        );
    }
    println!("figures in {}", figures.display());
    Ok(())
}

/// The release build's scale example over `url` at `observations`, with the release engram.
pub(crate) fn scale_example(url: &str, observations: usize) -> Command {
    let release = target_dir().join("release");
    let mut command = Command::new(release.join("examples").join("scale"));
    command
        .args(["--database-url", url])
        .args(["--observations", &observations.to_string()])
        .arg("--engram")
        .arg(release.join("engram"));
    command
}

/// Builds the release binary and the scale example.
pub(crate) fn build() -> Result<()> {
    for what in [
        ["build", "--release", "-p", "engram", "--bin", "engram"].as_slice(),
        &["build", "--release", "-p", "engram", "--example", "scale"],
    ] {
        cmd::run(
            cargo()
                .current_dir(workspace_root())
                .args(what)
                .arg("--quiet"),
        )?;
    }
    Ok(())
}

/// `runs` and the runs in `figures` (an earlier `scale.json`) at any other store and size,
/// ordered by store and size.
fn with_earlier_runs(figures: &Path, runs: Vec<Value>) -> Vec<Value> {
    let key = |run: &Value| (run["store"].to_string(), run["observations"].as_u64());
    let earlier: Vec<Value> = std::fs::read_to_string(figures)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let mut all: Vec<Value> = (earlier.into_iter())
        .filter(|old| runs.iter().all(|new| key(new) != key(old)))
        .collect();
    all.extend(runs);
    all.sort_by_key(key);
    all
}

/// `pg_database_size` of the database at `url`.
fn database_bytes(pg: &postgres::PgInstall, url: &str) -> Result<u64> {
    let psql = postgres::find_psql(Some(pg)).context("no psql")?;
    let size = cmd::output(Command::new(psql).args([
        url,
        "-Atc",
        "SELECT pg_database_size(current_database())",
    ]))?;
    size.trim().parse().context("pg_database_size")
}

/// The markdown table: one row per call, one column per (store, size).
fn table(runs: &[Value]) -> String {
    let head: Vec<String> = (runs.iter())
        .map(|r| {
            format!(
                "{} {}",
                r["store"].as_str().unwrap_or("?"),
                thousands(&r["observations"])
            )
        })
        .collect();
    let mut out = format!(
        "| p50 / p99 ms | {} |\n|---|{}\n",
        head.join(" | "),
        "---|".repeat(runs.len())
    );
    for call in CALLS {
        let cells: Vec<String> = (runs.iter())
            .map(|r| {
                let latency = &r["calls"][call];
                if latency.is_null() {
                    "—".to_owned()
                } else {
                    format!("{} / {}", latency["p50"], latency["p99"])
                }
            })
            .collect();
        out.push_str(&format!("| `{call}` | {} |\n", cells.join(" | ")));
    }
    let rows: [Row; 7] = [
        ("load (import), observations/s", |r| {
            thousands(&r["load_observations_per_second"])
        }),
        ("indexing, observations/s", |r| {
            if r["text_only"] == true {
                "— (text only)".to_owned()
            } else {
                thousands(&r["index_observations_per_second"])
            }
        }),
        ("vector index build after indexing, s", |r| {
            let seconds = &r["hnsw_seconds"];
            let seconds = if seconds.is_null() {
                &r["vector_lists_seconds"]
            } else {
                seconds
            };
            match seconds.as_f64() {
                Some(s) => format!("{s:.1}"),
                None => "—".to_owned(),
            }
        }),
        ("disk bytes per observation", |r| {
            let per =
                r["disk_bytes"].as_f64().unwrap_or(0.0) / r["observations"].as_f64().unwrap_or(1.0);
            format!("{per:.0}")
        }),
        ("resident memory at the end, MB", |r| {
            r["rss_mb"].to_string()
        }),
        ("peak resident memory, MB", |r| r["peak_rss_mb"].to_string()),
        ("nodes / relations", |r| {
            format!(
                "{} / {}",
                thousands(&r["nodes"]),
                thousands(&r["relations"])
            )
        }),
    ];
    for (label, cell) in rows {
        let cells: Vec<String> = runs.iter().map(cell).collect();
        out.push_str(&format!("| {label} | {} |\n", cells.join(" | ")));
    }
    out
}

/// A row of the table below the calls: its label and how each run fills its cell.
type Row = (&'static str, fn(&Value) -> String);

/// `1234567` as `1,234,567`.
fn thousands(value: &Value) -> String {
    let digits = value
        .as_f64()
        .map_or_else(|| "?".to_owned(), |n| format!("{n:.0}"));
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) && digit.is_ascii_digit() {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Draws the curves with matplotlib, installed into `target/bench/plot-venv` when missing.
fn draw(figures: &Path, plot: &Path) -> Result<()> {
    let venv = target_dir().join("bench").join("plot-venv");
    let python: PathBuf = venv.join("bin").join("python");
    if !python.exists() {
        cmd::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    if !cmd::succeeds(Command::new(&python).args(["-c", "import matplotlib"])) {
        cmd::run(Command::new(&python).args(["-m", "pip", "install", "--quiet", "matplotlib"]))?;
    }
    let script = workspace_root()
        .join("xtask")
        .join("bench")
        .join("scale_plot.py");
    cmd::run(Command::new(&python).arg(script).arg(figures).arg(plot))
}
