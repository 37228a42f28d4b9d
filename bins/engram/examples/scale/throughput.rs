//! Throughput of mixed clients against 1, 2, 4… `engram serve` processes sharing one store:
//! each client keeps one call in flight, bound to process `client % processes`, for
//! `--seconds`; 40 % one-word text searches, 20 % `open_nodes`, 15 % `get_neighborhood`, 15 %
//! `add_observations` of one text, 10 % `create_entities` of one new node.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::{Latency, call, connect, node_name, serve, skewed_word, text};

/// The load each run applies.
#[derive(clap::Args)]
pub struct Load {
    /// Clients, each with one call in flight.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Seconds each run lasts.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
}

/// One call a client makes, its tool and arguments, drawn from the mix above.
/// `run` names the run, so the nodes one creates are new in every run on the same store.
fn next_call(
    rng: &mut StdRng,
    (run, client, made): (usize, usize, usize),
    nodes: usize,
) -> (&'static str, Value) {
    let node = |rng: &mut StdRng| node_name(rng.random_range(0..nodes));
    match rng.random_range(0..100) {
        0..40 => (
            "search_nodes",
            json!({"query": skewed_word(rng), "mode": "text", "min_score": 0}),
        ),
        40..60 => ("open_nodes", json!({"names": [node(rng)]})),
        60..75 => ("get_neighborhood", json!({"name": node(rng), "depth": 1})),
        75..90 => (
            "add_observations",
            json!({"observations": [{"entity_name": node(rng), "contents": [text(rng)]}]}),
        ),
        _ => (
            "create_entities",
            json!({"entities": [{"name": format!("run-{run}-client-{client}-{made}"),
                   "entity_type": "new", "observations": [text(rng)]}]}),
        ),
    }
}

/// Runs the load against each count of `processes` in turn, over `database_url` (its
/// workspace holding `nodes` nodes), then against the `running` servers if any (one run, its
/// `processes` field 0), and returns one figure per run: calls per second, and p50 / p99 in
/// all and per tool.
pub async fn run(
    engram: &Path,
    database_url: &str,
    nodes: usize,
    (processes, running): (&[u16], &[String]),
    load: &Load,
) -> Result<Vec<Value>> {
    let mut runs = Vec::new();
    let counts = processes.iter().map(|&count| usize::from(count));
    let counts = counts.chain((!running.is_empty()).then_some(0));
    for count in counts {
        let mut servers = Vec::with_capacity(count);
        for _ in 0..count {
            servers.push(serve(engram, database_url, &["--embedder", "none"], "").await?);
        }
        let bases: Vec<String> = match count {
            0 => running.to_vec(),
            _ => servers.iter().map(|server| server.base.clone()).collect(),
        };
        let deadline = Instant::now() + Duration::from_secs(load.seconds);
        let mut clients = tokio::task::JoinSet::new();
        for client in 0..load.clients {
            let base = bases[client % bases.len()].clone();
            clients.spawn(async move {
                let mcp = connect(&base).await?;
                let mut rng = StdRng::seed_from_u64(client as u64 * 7_919 + count as u64);
                // Runs against running servers name their new nodes apart from the others'.
                let count = if count == 0 { 1_000 } else { count };
                let mut times: Vec<(&'static str, Duration)> = Vec::new();
                while Instant::now() < deadline {
                    let (tool, arguments) =
                        next_call(&mut rng, (count, client, times.len()), nodes);
                    let started = Instant::now();
                    call(&mcp, tool, arguments).await?;
                    times.push((tool, started.elapsed()));
                }
                mcp.cancel().await?;
                anyhow::Ok(times)
            });
        }
        let started = Instant::now();
        let mut by_tool: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
        while let Some(times) = clients.join_next().await {
            for (tool, time) in times?? {
                by_tool.entry(tool).or_default().push(time);
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        for mut server in servers {
            server.process.start_kill()?;
            server.process.wait().await?;
        }
        let all: Vec<Duration> = by_tool.values().flatten().copied().collect();
        let calls = all.len();
        let tools: BTreeMap<&str, Latency> = (by_tool.into_iter())
            .map(|(tool, times)| (tool, Latency::of(times)))
            .collect();
        runs.push(json!({
            "processes": count,
            "clients": load.clients,
            "seconds": (seconds * 10.0).round() / 10.0,
            "calls": calls,
            "calls_per_second": (calls as f64 / seconds).round(),
            "all": Latency::of(all),
            "tools": tools,
        }));
    }
    Ok(runs)
}
