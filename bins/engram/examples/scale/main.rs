//! The scale benchmark, one store at one size: loads `--observations` observations (texts of
//! varied length, one to seven a node, two relations a node) into a fresh store with
//! `engram import`, serves it with `engram serve`, waits for the indexer, then measures each
//! call over Streamable HTTP with rmcp's client and prints one JSON document.
//! `cargo xtask bench scale` runs it at each size on both stores and draws the curve.
//!
//! Vectors come from a deterministic embedder this program serves over Ollama's `/api/embed`
//! (a hash of the text spread over 384 dimensions): fast enough for a million texts on two
//! cores, and harder for HNSW than a real model's vectors, which cluster by meaning. With
//! `--text-only` the server runs without an embedder: no indexing, and only the calls that
//! need no vectors are measured (for sizes where PostgreSQL's HNSW indexing would take hours).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::Json;
use axum::routing::post;
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

/// The dimension of the deterministic vectors.
const DIMENSION: usize = 384;
/// Words in the synthetic vocabulary; texts draw from it with a skew (a few words are common,
/// most are rare), as in real text.
const VOCABULARY: usize = 20_000;
/// Node types and relation types.
const TYPES: usize = 20;
const RELATION_TYPES: usize = 10;
/// The workspace loaded.
const WORKSPACE: &str = "scale";

/// Load one store with `--observations` observations and measure every call.
#[derive(Parser)]
struct Args {
    /// The store: a PostgreSQL URL or a SQLite path (created; it must not exist).
    #[arg(long)]
    database_url: String,
    /// Observations to load.
    #[arg(long)]
    observations: usize,
    /// Samples per call (the similarity report and `find_similar_nodes` take fewer).
    #[arg(long, default_value_t = 30)]
    samples: usize,
    /// The engram binary.
    #[arg(long)]
    engram: PathBuf,
    /// Serve without an embedder and measure only the calls that need no vectors.
    #[arg(long)]
    text_only: bool,
    /// Instead of each call's latency, the throughput of mixed clients against this many
    /// `engram serve` processes on the one store, one run per count (e.g. `1,2,4`; no
    /// embedder).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..))]
    processes: Vec<u16>,
    /// Instead of starting processes, send the mixed clients to these running servers
    /// (`http://HOST:PORT`, e.g. a load balancer in front of several processes), after
    /// loading the store as usual.
    #[arg(long, value_delimiter = ',')]
    servers: Vec<String>,
    #[command(flatten)]
    load: throughput::Load,
    /// The store already holds this size's data (an earlier run's): measure without loading.
    #[arg(long)]
    reuse: bool,
}

mod throughput;

/// Latency figures of one call, milliseconds.
#[derive(Serialize)]
struct Latency {
    samples: usize,
    p50: f64,
    p99: f64,
}

impl Latency {
    fn of(mut times: Vec<Duration>) -> Self {
        if times.is_empty() {
            return Self {
                samples: 0,
                p50: 0.0,
                p99: 0.0,
            };
        }
        times.sort();
        let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
        let at = |q: f64| {
            ms(times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1])
        };
        Self {
            samples: times.len(),
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

/// What one run measured.
#[derive(Serialize)]
struct Report {
    store: &'static str,
    observations: usize,
    nodes: usize,
    relations: usize,
    /// Absent with `--reuse`.
    #[serde(skip_serializing_if = "Option::is_none")]
    load_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load_observations_per_second: Option<f64>,
    /// Absent with `--text-only`.
    #[serde(skip_serializing_if = "Option::is_none")]
    index_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index_observations_per_second: Option<f64>,
    /// SQLite: seconds to build (or wait for) the inverted files over the vectors.
    #[serde(skip_serializing_if = "Option::is_none")]
    vector_lists_seconds: Option<f64>,
    /// PostgreSQL: seconds from the last vector saved to a valid HNSW index (the server builds
    /// it once its indexer's queue is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    hnsw_seconds: Option<f64>,
    text_only: bool,
    /// The SQLite files' bytes (PostgreSQL's are read by `cargo xtask bench scale`).
    disk_bytes: Option<u64>,
    rss_mb: f64,
    peak_rss_mb: f64,
    calls: BTreeMap<&'static str, Latency>,
}

/// A deterministic unit vector for `text`: its FNV-1a hash seeds a generator.
fn vector_of(text: &str) -> Vec<f32> {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = StdRng::seed_from_u64(hash);
    let vector: Vec<f32> = (0..DIMENSION)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector.into_iter().map(|x| x / norm).collect()
}

/// Ollama's `/api/embed`, answered with [`vector_of`] each input.
async fn embed(Json(request): Json<Value>) -> Json<Value> {
    let input: Vec<String> = match &request["input"] {
        Value::String(text) => vec![text.clone()],
        other => serde_json::from_value(other.clone()).unwrap_or_default(),
    };
    let embeddings: Vec<Vec<f32>> = input.iter().map(|text| vector_of(text)).collect();
    Json(json!({"model": request["model"], "embeddings": embeddings}))
}

/// Serves the deterministic embedder; its base URL.
async fn serve_embedder() -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new().route("/api/embed", post(embed));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// The synthetic vocabulary's word `i`: syllables, so words look like words and stem apart.
fn word(i: usize) -> String {
    const SYLLABLES: [&str; 24] = [
        "ka", "lo", "mi", "ra", "tu", "se", "no", "vi", "da", "po", "li", "ge", "zu", "fa", "ri",
        "mo", "te", "bu", "ha", "ne", "so", "ju", "we", "xi",
    ];
    let mut out = String::new();
    let mut n = i + SYLLABLES.len();
    while n > 0 {
        out.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    out
}

/// A word drawn with a skew towards the common ones.
fn skewed_word(rng: &mut StdRng) -> String {
    let u: f64 = rng.random();
    word(((VOCABULARY as f64) * u.powi(3)) as usize)
}

/// A text of 4–60 words.
fn text(rng: &mut StdRng) -> String {
    let words = rng.random_range(4..=60);
    (0..words)
        .map(|_| skewed_word(rng))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The name of node `i`.
fn node_name(i: usize) -> String {
    format!("node-{i:07}")
}

/// Writes the import file: nodes with 1–7 observations (four on average) until `observations`,
/// then two relations from each node. Returns (nodes, relations).
fn write_file(path: &Path, observations: usize) -> Result<(usize, usize)> {
    let mut rng = StdRng::seed_from_u64(42);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let (mut nodes, mut written) = (0, 0);
    while written < observations {
        let count = rng.random_range(1..=7).min(observations - written);
        let texts: Vec<String> = (0..count).map(|_| text(&mut rng)).collect();
        let node = json!({"type": "entity", "name": node_name(nodes),
            "entityType": format!("type-{}", rng.random_range(0..TYPES)),
            "observations": texts});
        writeln!(out, "{node}")?;
        nodes += 1;
        written += count;
    }
    let mut relations = std::collections::HashSet::new();
    for from in 0..nodes {
        for _ in 0..2 {
            let to = rng.random_range(0..nodes);
            let kind = rng.random_range(0..RELATION_TYPES);
            if to != from && relations.insert((from, to, kind)) {
                let relation = json!({"type": "relation", "from": node_name(from),
                    "to": node_name(to), "relationType": format!("relates-{kind}")});
                writeln!(out, "{relation}")?;
            }
        }
    }
    out.flush()?;
    Ok((nodes, relations.len()))
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> Result<Value> {
    let arguments = arguments.as_object().cloned().context("an object")?;
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .context(tool)?;
    anyhow::ensure!(result.is_error != Some(true), "{tool} failed: {result:?}");
    Ok(result.structured_content.unwrap_or(Value::Null))
}

/// Times `samples` calls of `tool`, the arguments of each from `arguments(k)`.
async fn measure(
    client: &Client,
    tool: &'static str,
    samples: usize,
    arguments: impl Fn(usize) -> Value,
) -> Result<Latency> {
    let mut times = Vec::with_capacity(samples);
    for k in 0..samples {
        let started = Instant::now();
        call(client, tool, arguments(k)).await?;
        times.push(started.elapsed());
    }
    Ok(Latency::of(times))
}

/// `VmRSS` and `VmHWM` of `pid`, MB.
fn memory_mb(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        (status.lines())
            .find_map(|line| line.strip_prefix(name))
            .and_then(|kb| kb.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| (kb / 102.4).round() / 10.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A running `engram serve` and its base URL.
struct Server {
    process: tokio::process::Child,
    base: String,
}

/// `engram serve` on a free port of 127.0.0.1 over `database_url`, with `embedder_args`
/// (and `OLLAMA_HOST=ollama`), once `/healthz` answers.
async fn serve(
    engram: &Path,
    database_url: &str,
    embedder_args: &[&str],
    ollama: &str,
) -> Result<Server> {
    let port = free_port()?;
    let started = Instant::now();
    let process = tokio::process::Command::new(engram)
        .arg("serve")
        .args(embedder_args)
        // Group `graph` too: the graph vocabulary is measured with the rest.
        .args(["--tools", "all"])
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .env("ENGRAM_DATABASE_URL", database_url)
        .env("OLLAMA_HOST", ollama)
        .env("ENGRAM_LOG", "warn")
        .kill_on_drop(true)
        .spawn()?;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        anyhow::ensure!(started.elapsed() < Duration::from_secs(60), "no server");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Server { process, base })
}

/// An MCP client of the server at `base`, in the benchmark's workspace.
async fn connect(base: &str) -> Result<Client> {
    let headers =
        std::collections::HashMap::from([("x-memory-workspace".parse()?, WORKSPACE.parse()?)]);
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    Ok(().serve(transport).await?)
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Waits until every observation has its vector (at most four hours from `served`).
async fn wait_for_indexing(client: &Client, served: Instant) -> Result<()> {
    loop {
        let stats = call(client, "get_stats", json!({})).await?;
        if stats["embedding_coverage"].as_f64() == Some(1.0) {
            return Ok(());
        }
        anyhow::ensure!(
            served.elapsed() < Duration::from_secs(4 * 3_600),
            "indexing did not finish in 4 hours: {stats}"
        );
        // Counting a large store's coverage takes its own share of the cores: ask seldom.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

/// Waits until PostgreSQL's HNSW index over the 384-dimension vectors is valid (at most two
/// hours).
async fn wait_for_hnsw(database_url: &str) -> Result<()> {
    let store = engram_pg::PgStore::connect(database_url).await?;
    let started = Instant::now();
    loop {
        if store.hnsw_index_state(DIMENSION as i32).await? == Some(true) {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(2 * 3_600),
            "the HNSW index was not built in 2 hours"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Loads `file` into the benchmark's workspace of `database_url` with `engram import`.
fn import(engram: &Path, file: &Path, database_url: &str) -> Result<()> {
    let imported = std::process::Command::new(engram)
        .args([
            "import",
            &file.display().to_string(),
            "--workspace",
            WORKSPACE,
        ])
        .arg("--create-workspace")
        .env("ENGRAM_DATABASE_URL", database_url)
        .env("ENGRAM_LOG", "warn")
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(imported.success(), "the import failed");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let sqlite = !args.database_url.starts_with("postgres");
    let embedder = serve_embedder().await?;
    let directory = tempfile::tempdir()?;
    let file = directory.path().join("scale.jsonl");
    let (nodes, relations) = write_file(&file, args.observations)?;

    let started = Instant::now();
    let load_seconds = if args.reuse {
        None
    } else {
        import(&args.engram, &file, &args.database_url)?;
        Some(started.elapsed().as_secs_f64())
    };

    if !args.processes.is_empty() || !args.servers.is_empty() {
        let runs = throughput::run(
            &args.engram,
            &args.database_url,
            nodes,
            (&args.processes, &args.servers),
            &args.load,
        )
        .await?;
        let report = json!({"store": if sqlite { "sqlite" } else { "postgresql" },
            "observations": args.observations, "nodes": nodes, "throughput": runs});
        println!("{report}");
        return Ok(());
    }
    let embedder_args: &[&str] = if args.text_only {
        &["--embedder", "none"]
    } else {
        &["--embedder", "ollama", "--embed-model", "scale-hash"]
    };
    let served = Instant::now();
    let mut server = serve(&args.engram, &args.database_url, embedder_args, &embedder).await?;
    let pid = server.process.id().context("the server's pid")?;
    let client = connect(&server.base).await?;

    // The indexer starts with the server; a reused store holds its vectors already.
    let index_seconds = if args.text_only || args.reuse {
        None
    } else {
        wait_for_indexing(&client, served).await?;
        Some(served.elapsed().as_secs_f64())
    };

    // SQLite's inverted files over the vectors, built (or waited for) before measuring.
    let lists_seconds = if sqlite && !args.text_only {
        let started = Instant::now();
        let store = engram_sqlite::SqliteStore::open(&args.database_url).await?;
        store.build_vector_lists().await?;
        Some(started.elapsed().as_secs_f64())
    } else {
        None
    };

    let hnsw_seconds = if !sqlite && !args.text_only {
        let started = Instant::now();
        wait_for_hnsw(&args.database_url).await?;
        Some((started.elapsed().as_secs_f64() * 10.0).round() / 10.0)
    } else {
        None
    };

    let s = args.samples;
    let name = |k: usize| node_name((k * 7_919 + 13) % nodes);
    let query = |k: usize| {
        let mut rng = StdRng::seed_from_u64(k as u64);
        (0..1 + k % 2)
            .map(|_| skewed_word(&mut rng))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut calls = BTreeMap::new();
    calls.insert(
        "open_nodes",
        measure(&client, "open_nodes", s, |k| json!({"names": [name(k)]})).await?,
    );
    for (label, mode) in [
        ("search_nodes hybrid", "hybrid"),
        ("search_nodes embedding", "embedding"),
        ("search_nodes text", "text"),
    ] {
        if args.text_only && mode != "text" {
            continue;
        }
        let latency = measure(
            &client,
            "search_nodes",
            s,
            |k| json!({"query": query(k), "mode": mode, "min_score": 0}),
        )
        .await?;
        calls.insert(label, latency);
    }
    // The figure PostgreSQL's text search is held to: one word.
    let one_word = |k: usize| skewed_word(&mut StdRng::seed_from_u64(k as u64));
    calls.insert(
        "search_nodes text, one word",
        measure(
            &client,
            "search_nodes",
            s,
            |k| json!({"query": one_word(k), "mode": "text", "min_score": 0}),
        )
        .await?,
    );
    calls.insert(
        "search_observations",
        measure(&client, "search_observations", s, |k| {
            let mode = if args.text_only { "text" } else { "hybrid" };
            json!({"query": query(k), "min_score": 0, "mode": mode})
        })
        .await?,
    );
    calls.insert(
        "get_neighborhood depth 2",
        measure(
            &client,
            "get_neighborhood",
            s,
            |k| json!({"name": name(k), "depth": 2}),
        )
        .await?,
    );
    calls.insert(
        "get_path",
        measure(
            &client,
            "get_path",
            s,
            |k| json!({"from_entity": name(k), "to_entity": name(k + 1)}),
        )
        .await?,
    );
    calls.insert(
        "find_all_paths depth 4",
        measure(
            &client,
            "find_all_paths",
            s,
            |k| json!({"from_entity": name(k), "to_entity": name(k + 1), "max_depth": 4}),
        )
        .await?,
    );
    calls.insert(
        "get_subgraph 10 nodes depth 1",
        measure(&client, "get_subgraph", s, |k| {
            let names: Vec<String> = (0..10).map(|i| name(k * 10 + i)).collect();
            json!({"names": names, "depth": 1})
        })
        .await?,
    );
    calls.insert(
        "describe_node",
        measure(&client, "describe_node", s, |k| json!({"name": name(k)})).await?,
    );
    calls.insert(
        "get_relations from a node",
        measure(
            &client,
            "get_relations",
            s,
            |k| json!({"from_entity": name(k)}),
        )
        .await?,
    );
    calls.insert(
        "get_graph_vocabulary",
        measure(&client, "get_graph_vocabulary", s, |_| json!({})).await?,
    );
    calls.insert(
        "read_graph first page",
        measure(&client, "read_graph", s, |_| json!({"limit": 50})).await?,
    );
    let last = node_name(nodes.saturating_sub(51));
    calls.insert(
        "read_graph last page",
        measure(
            &client,
            "read_graph",
            s,
            |_| json!({"limit": 50, "cursor": last}),
        )
        .await?,
    );
    calls.insert(
        "get_stats",
        measure(&client, "get_stats", s, |_| json!({})).await?,
    );
    if !args.text_only {
        calls.insert(
            "find_similar_nodes",
            measure(&client, "find_similar_nodes", s.min(5), |_| json!({})).await?,
        );
        calls.insert(
            "get_consolidation_report",
            measure(&client, "get_consolidation_report", s.min(3), |_| json!({})).await?,
        );
    }
    let (rss_mb, peak_rss_mb) = memory_mb(pid);
    client.cancel().await?;
    server.process.start_kill()?;
    server.process.wait().await?;

    let disk_bytes = sqlite.then(|| {
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", args.database_url)).ok())
            .map(|m| m.len())
            .sum()
    });
    let report = Report {
        store: if sqlite { "sqlite" } else { "postgresql" },
        observations: args.observations,
        nodes,
        relations,
        load_seconds: load_seconds.map(|seconds| (seconds * 10.0).round() / 10.0),
        load_observations_per_second: load_seconds
            .map(|seconds| (args.observations as f64 / seconds).round()),
        index_seconds: index_seconds.map(|seconds| (seconds * 10.0).round() / 10.0),
        index_observations_per_second: index_seconds
            .map(|seconds| (args.observations as f64 / seconds).round()),
        vector_lists_seconds: lists_seconds,
        hnsw_seconds,
        text_only: args.text_only,
        disk_bytes,
        rss_mb,
        peak_rss_mb,
        calls,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
