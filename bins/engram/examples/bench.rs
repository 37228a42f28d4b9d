//! The side-by-side benchmark driver: one MCP workload against one memory server, over stdio
//! (a child process: engram, the reference server, mcp-memory) or Streamable HTTP (engram),
//! spoken with rmcp's client, which costs far less per call than the Python SDK.
//! `cargo xtask bench peers` runs it against every system and prints the table.
//!
//! The shared workload uses the reference server's argument names (engram accepts them), so
//! every system gets the same calls: `create_entities` (entities of 3 observations, batches of
//! 100) to 1,000 and then 10,000 entities; at each size `open_nodes` (1 and 10 names),
//! `search_nodes` (one word), `add_observations` (one text) and `delete_entities` (one name),
//! `--samples` each. With `--engram`, engram's own calls follow at 10,000: `get_stats`,
//! `get_neighborhood` (depth 2), `get_path`, `read_graph` (a page of 50), text search through
//! engram's `mode`. Prints one JSON document on stdout.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

/// Entities per `create_entities` call.
const BATCH: usize = 100;
/// Observations per created entity.
const OBSERVATIONS: usize = 3;
/// The words observations are made of; a search asks for one of them.
const WORDS: [&str; 16] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa",
];

/// Run the shared workload against one memory server.
#[derive(Parser)]
struct Args {
    /// The system's name in the results.
    #[arg(long)]
    system: String,
    /// A Streamable HTTP server (`http://127.0.0.1:PORT/mcp`); else `--command` over stdio.
    #[arg(long)]
    url: Option<String>,
    /// The workspace (`X-Memory-Workspace`) for `--url`.
    #[arg(long, default_value = "bench")]
    workspace: String,
    /// The server to start and speak to over stdio, then its arguments.
    #[arg(long, num_args = 1.., allow_hyphen_values = true)]
    command: Vec<String>,
    /// Also run engram's own calls.
    #[arg(long)]
    engram: bool,
    /// The engram server embeds (an embedder other than `none`): also measure embedding-mode
    /// search, `find_similar_nodes` and `get_consolidation_report` (at most 10 samples: it
    /// compares every node with every other), once the indexer has caught up.
    #[arg(long, requires = "engram")]
    model: bool,
    /// Samples per call and size.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// The sizes (entities) at which calls are measured.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    sizes: Vec<usize>,
}

/// Latency figures of one call, milliseconds.
#[derive(Serialize)]
struct Latency {
    samples: usize,
    p50: f64,
    p95: f64,
    p99: f64,
    mean: f64,
}

impl Latency {
    fn of(mut times: Vec<Duration>) -> Self {
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let at = |q: f64| {
            ms(times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1])
        };
        Self {
            samples: times.len(),
            p50: at(0.50),
            p95: at(0.95),
            p99: at(0.99),
            mean: times.iter().map(|d| ms(*d)).sum::<f64>() / times.len() as f64,
        }
    }
}

#[derive(Serialize, Default)]
struct Report {
    system: String,
    transport: &'static str,
    /// Process start to the `initialize` answer (stdio only), ms.
    initialize_ms: Option<f64>,
    /// Seconds to create the first size, then to grow to each next one.
    create_seconds: BTreeMap<usize, f64>,
    /// Observations written per second while creating, per size.
    create_observations_per_second: BTreeMap<usize, f64>,
    /// `call` at `size` → latency.
    calls: BTreeMap<String, Latency>,
    /// Resident memory of the server process at the end (stdio only), MB.
    rss_mb: Option<f64>,
    /// Bytes of one call's result as it travels (`content` and `structuredContent`, compact
    /// JSON): `call @size` → bytes. What a client must carry and check, and a model read.
    result_bytes: BTreeMap<String, usize>,
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> Result<Value> {
    Ok(call_result(client, tool, arguments)
        .await?
        .structured_content
        .unwrap_or(Value::Null))
}

async fn call_result(
    client: &Client,
    tool: &'static str,
    arguments: Value,
) -> Result<rmcp::model::CallToolResult> {
    let arguments = arguments
        .as_object()
        .cloned()
        .context("arguments are an object")?;
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .context(tool)?;
    anyhow::ensure!(result.is_error != Some(true), "{tool} failed: {result:?}");
    Ok(result)
}

/// Bytes of `result`'s content and structured content, as compact JSON.
fn result_bytes(result: &rmcp::model::CallToolResult) -> usize {
    let content = serde_json::to_vec(&result.content).map_or(0, |v| v.len());
    let structured = (result.structured_content.as_ref())
        .and_then(|v| serde_json::to_vec(v).ok())
        .map_or(0, |v| v.len());
    content + structured
}

/// Waits until `get_stats` says every vector is current (at most 30 minutes).
async fn wait_for_indexing(client: &Client) -> Result<()> {
    let started = Instant::now();
    loop {
        let stats = call(client, "get_stats", json!({})).await?;
        if stats["embedding_coverage"].as_f64() == Some(1.0) {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(1_800),
            "indexing did not catch up in 30 minutes: {stats}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn entity(i: usize) -> Value {
    let observations: Vec<String> = (0..OBSERVATIONS)
        .map(|j| {
            let word = WORDS[(i * 7 + j) % WORDS.len()];
            format!(
                "entity {i} fact {j} mentions {word} and the number {}",
                i * 31 + j
            )
        })
        .collect();
    json!({"name": format!("entity-{i:06}"), "entityType": "thing", "observations": observations})
}

/// A deterministic spread of indexes below `n`.
fn pick(k: usize, n: usize) -> usize {
    (k * 7_919 + 13) % n
}

async fn measure<F, Fut>(samples: usize, mut one: F) -> Result<Latency>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let mut times = Vec::with_capacity(samples);
    for k in 0..samples {
        let started = Instant::now();
        one(k).await?;
        times.push(started.elapsed());
    }
    Ok(Latency::of(times))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let mut report = Report {
        system: args.system.clone(),
        ..Report::default()
    };
    let mut pid = None;
    let client: Client = match &args.url {
        Some(url) => {
            report.transport = "streamable-http";
            let headers = std::collections::HashMap::from([(
                "x-memory-workspace".parse()?,
                args.workspace.parse()?,
            )]);
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(headers);
            let transport =
                StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
            ().serve(transport).await?
        }
        None => {
            report.transport = "stdio";
            let (program, rest) = args.command.split_first().context("--url or --command")?;
            let mut command = tokio::process::Command::new(program);
            command.args(rest).stderr(std::process::Stdio::null());
            let started = Instant::now();
            let (transport, _) = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::null())
                .spawn()?;
            pid = transport.id();
            let client = ().serve(transport).await?;
            report.initialize_ms = Some(started.elapsed().as_secs_f64() * 1e3);
            client
        }
    };

    let mut created = 0;
    for &size in &args.sizes {
        let started = Instant::now();
        let first = created;
        while created < size {
            let batch: Vec<Value> = (created..(created + BATCH).min(size)).map(entity).collect();
            let first_batch = created == 0 && batch.len() == BATCH;
            created += batch.len();
            let result =
                call_result(&client, "create_entities", json!({"entities": batch})).await?;
            if first_batch {
                (report.result_bytes)
                    .insert(format!("create_entities {BATCH}"), result_bytes(&result));
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        report.create_seconds.insert(size, seconds);
        report
            .create_observations_per_second
            .insert(size, ((created - first) * OBSERVATIONS) as f64 / seconds);
        let name = |i: usize| format!("entity-{i:06}");
        let samples = args.samples;
        let open1 = measure(samples, |k| {
            let client = &client;
            async move {
                call(
                    client,
                    "open_nodes",
                    json!({"names": [name(pick(k, size))]}),
                )
                .await
                .map(drop)
            }
        })
        .await?;
        report.calls.insert(format!("open_nodes 1 @{size}"), open1);
        let one = call_result(&client, "open_nodes", json!({"names": [name(42)]})).await?;
        (report.result_bytes).insert(format!("open_nodes 1 @{size}"), result_bytes(&one));
        let open10 = measure(samples, |k| {
            let client = &client;
            let names: Vec<String> = (0..10).map(|j| name(pick(k * 10 + j, size))).collect();
            async move {
                call(client, "open_nodes", json!({"names": names}))
                    .await
                    .map(drop)
            }
        })
        .await?;
        report
            .calls
            .insert(format!("open_nodes 10 @{size}"), open10);
        let engram = args.engram;
        let search = measure(samples, |k| {
            let client = &client;
            let mut arguments = json!({"query": WORDS[k % WORDS.len()]});
            if engram {
                arguments["mode"] = json!("text");
                arguments["limit"] = json!(10);
            }
            async move { call(client, "search_nodes", arguments).await.map(drop) }
        })
        .await?;
        report.calls.insert(format!("search_nodes @{size}"), search);
        let mut arguments = json!({"query": WORDS[0], "limit": 10});
        if engram {
            arguments["mode"] = json!("text");
        }
        let found = call_result(&client, "search_nodes", arguments).await?;
        (report.result_bytes).insert(format!("search_nodes 10 @{size}"), result_bytes(&found));
        let add = measure(samples, |k| {
            let client = &client;
            let arguments = json!({"observations": [{"entityName": name(pick(k, size)),
                                                     "contents": [format!("added fact {k} at {size}")]}]});
            async move { call(client, "add_observations", arguments).await.map(drop) }
        })
        .await?;
        report
            .calls
            .insert(format!("add_observations @{size}"), add);
        // Deletes the last entities and creates them again, so the size holds.
        let victims: Vec<usize> = (size - samples.min(size)..size).collect();
        let delete = measure(victims.len(), |k| {
            let client = &client;
            let victim = name(victims[k]);
            async move {
                call(client, "delete_entities", json!({"entityNames": [victim]}))
                    .await
                    .map(drop)
            }
        })
        .await?;
        report
            .calls
            .insert(format!("delete_entities @{size}"), delete);
        for chunk in victims.chunks(BATCH) {
            let batch: Vec<Value> = chunk.iter().map(|&i| entity(i)).collect();
            call(&client, "create_entities", json!({"entities": batch})).await?;
        }
    }

    if args.engram {
        let size = created;
        // A chain of relations through the first entities, for the graph walks.
        let chain = size.min(2_000);
        let relations: Vec<Value> = (0..chain - 1)
            .map(|i| json!({"from": format!("entity-{i:06}"), "to": format!("entity-{:06}", i + 1), "relationType": "next"}))
            .collect();
        for chunk in relations.chunks(1_000) {
            call(&client, "create_relations", json!({"relations": chunk})).await?;
        }
        let samples = args.samples;
        type Arguments<'a> = Box<dyn Fn(usize) -> (&'static str, Value) + 'a>;
        let engram_calls: [(&str, Arguments<'_>); 5] = [
            ("get_stats", Box::new(|_| ("get_stats", json!({})))),
            (
                "get_neighborhood depth 2",
                Box::new(|k| {
                    (
                        "get_neighborhood",
                        json!({"name": format!("entity-{:06}", pick(k, chain - 1)), "depth": 2}),
                    )
                }),
            ),
            (
                "get_path 20 hops",
                Box::new(|k| {
                    let from = pick(k, chain - 21);
                    (
                        "get_path",
                        json!({"from_entity": format!("entity-{from:06}"), "to_entity": format!("entity-{:06}", from + 20)}),
                    )
                }),
            ),
            (
                "read_graph 50 summary",
                Box::new(|k| {
                    (
                        "read_graph",
                        json!({"cursor": format!("entity-{:06}", pick(k, size - 60)), "limit": 50}),
                    )
                }),
            ),
            (
                "search_nodes hybrid",
                Box::new(|k| {
                    (
                        "search_nodes",
                        json!({"query": format!("which entity mentions {} and {}", WORDS[k % 16], WORDS[(k + 5) % 16]), "limit": 10}),
                    )
                }),
            ),
        ];
        let run = async |label: &str, samples: usize, arguments: &Arguments<'_>| {
            let latency = measure(samples, |k| {
                let client = &client;
                let (tool, arguments) = arguments(k);
                async move { call(client, tool, arguments).await.map(drop) }
            })
            .await?;
            anyhow::Ok((format!("{label} @{size}"), latency))
        };
        for (label, arguments) in &engram_calls {
            let (name, latency) = run(label, samples, arguments).await?;
            report.calls.insert(name, latency);
        }
        if args.model {
            wait_for_indexing(&client).await?;
            let model_calls: [(&str, usize, Arguments<'_>); 3] = [
                (
                    "search_nodes embedding",
                    samples,
                    Box::new(|k| {
                        (
                            "search_nodes",
                            json!({"query": format!("which entity mentions {} and {}", WORDS[k % 16], WORDS[(k + 5) % 16]), "limit": 10, "mode": "embedding"}),
                        )
                    }),
                ),
                (
                    "find_similar_nodes",
                    samples,
                    Box::new(|_| ("find_similar_nodes", json!({"limit": 20}))),
                ),
                (
                    "get_consolidation_report",
                    samples.min(10),
                    Box::new(|_| ("get_consolidation_report", json!({}))),
                ),
            ];
            for (label, samples, arguments) in &model_calls {
                let (name, latency) = run(label, *samples, arguments).await?;
                report.calls.insert(name, latency);
            }
        }
    }

    if let Some(pid) = pid
        && let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
    {
        report.rss_mb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| kb / 1024.0);
    }
    client.cancel().await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
