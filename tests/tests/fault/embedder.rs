//! The embedder down (connection refused), then hanging (requests accepted, never
//! answered), then back, under two servers on one store: writes keep succeeding as fast as
//! before, searches answer from full text within the query-embedding budget and say so in
//! `notice`, and once the embedder is back the indexers reach full coverage.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::ollama::{FakeOllama, Mode, REJECTED};
use crate::harness::{Backend, Embedder, Figures, Mcp, Server, Store, bounded, percentile};

/// How long a search waits for the query's embedding (`engram_domain::QUERY_EMBEDDING_BUDGET`)
/// and what a search may take beyond it.
const QUERY_BUDGET: Duration = Duration::from_secs(3);
const SLACK: Duration = Duration::from_secs(1);
/// A search that does not wait for the embedder at all.
const FAST: Duration = Duration::from_secs(1);
/// Writes per phase (through both servers).
const WRITES: usize = 60;

/// Writes one node per call and keeps each call's time, per phase.
struct Writer {
    written: usize,
    latencies: HashMap<&'static str, Vec<Duration>>,
}

impl Writer {
    /// `WRITES` nodes (2 observations each) in `phase`, alternating between the clients.
    async fn write(&mut self, phase: &'static str, clients: &[&Mcp]) {
        for i in 0..WRITES {
            let name = format!("{phase}-{i:03}");
            let entity = json!({"name": name, "entity_type": "note", "observations": [
                format!("written while the embedder was {phase}, item {i}"),
                format!("{phase} keyword{phase} number {i}"),
            ]});
            let started = Instant::now();
            clients[i % clients.len()]
                .ok("create_entities", json!({"entities": [entity]}))
                .await;
            self.latencies
                .entry(phase)
                .or_default()
                .push(started.elapsed());
            self.written += 1;
        }
    }
}

/// A search and its time.
async fn search(client: &Mcp, query: &str) -> (Value, Duration) {
    let started = Instant::now();
    let found = client
        .ok("search_nodes", json!({"query": query, "limit": 5}))
        .await;
    (found, started.elapsed())
}

/// Asserts a search answered from full text, found `node`, and said why.
fn assert_text_fallback(found: &Value, node: &str, reason: &str) {
    assert_eq!(found["mode"], "text", "{found}");
    let notice = found["notice"].as_str().unwrap_or_default();
    assert!(
        notice.contains("answered by full-text search") && notice.contains(reason),
        "notice {notice:?} lacks {reason:?}"
    );
    let names: Vec<&str> = (found["results"].as_array().unwrap().iter())
        .filter_map(|hit| hit["name"].as_str())
        .collect();
    assert!(names.contains(&node), "{node} not found: {found}");
}

async fn wait_for_full_coverage(client: &Mcp, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let stats = client.ok("get_stats", json!({})).await;
        if stats["embedding_coverage"].as_f64() == Some(1.0) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "coverage not full {within:?} after the embedder came back: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn the_embedder_down_then_hanging_then_back(backend: Backend) {
    bounded(Duration::from_secs(150), async {
        let ollama = FakeOllama::start(Duration::ZERO).await;
        let embedder = Embedder::Ollama(ollama.url());
        let store = Store::fresh(backend).await;
        let (a, b) = tokio::join!(
            Server::start(&store, &embedder, "server-a"),
            Server::start(&store, &embedder, "server-b")
        );
        let (ca, cb) = (a.client().await, b.client().await);
        let mut figures = Figures::new(format!("{backend:?}/embedder down, hanging, back"));
        let mut writer = Writer {
            written: 0,
            latencies: HashMap::new(),
        };

        // Up: the baseline, searches by meaning.
        writer.write("up", &[&ca, &cb]).await;
        wait_for_full_coverage(&ca, Duration::from_secs(30)).await;
        let (found, _) = search(&ca, "keywordup number 7").await;
        assert_eq!(found["mode"], "hybrid", "{found}");
        assert!(found["notice"].is_null(), "{found}");

        // Down: nothing listens.
        ollama.set(Mode::Down).await;
        writer.write("down", &[&ca, &cb]).await;
        let (found, first_down) = search(&ca, "keyworddown").await;
        assert_text_fallback(&found, "down-000", "embedding search unavailable");
        assert!(first_down < QUERY_BUDGET + SLACK, "{first_down:?}");
        // The embedder is paused after a failure: the next search does not wait for it.
        let (found, paused_down) = search(&ca, "keyworddown number 12").await;
        assert_text_fallback(&found, "down-012", "trying it again in");
        assert!(paused_down < FAST, "{paused_down:?}");

        // Hanging: connections accepted, never answered.
        ollama.set(Mode::Hanging).await;
        writer.write("hanging", &[&ca, &cb]).await;
        // Server b has not met the outage in a search yet: it waits out the budget, no more.
        let (found, first_hang) = search(&cb, "keywordhanging").await;
        assert_text_fallback(&found, "hanging-000", "did not answer within");
        assert!(
            first_hang >= QUERY_BUDGET - Duration::from_millis(100)
                && first_hang < QUERY_BUDGET + SLACK,
            "{first_hang:?}"
        );
        let (found, paused_hang) = search(&cb, "keywordhanging number 5").await;
        assert_text_fallback(&found, "hanging-005", "trying it again in");
        assert!(paused_hang < FAST, "{paused_hang:?}");
        let (found, paused_a) = search(&ca, "keywordhanging number 9").await;
        assert_text_fallback(&found, "hanging-009", "embedding search unavailable");
        assert!(paused_a < FAST, "{paused_a:?}");

        // Back: the held requests are answered, the indexers catch up.
        ollama.set(Mode::Up).await;
        writer.write("back", &[&ca, &cb]).await;
        let recovery = wait_for_full_coverage(&ca, Duration::from_secs(60)).await;
        let stats = cb.ok("get_stats", json!({})).await;
        assert_eq!(stats["embedding_coverage"], 1.0, "{stats}");
        let observations = stats["observation_count"].as_u64().unwrap() as usize;
        let documents = (ollama.texts().keys())
            .filter(|text| text.starts_with("note "))
            .count();

        let baseline = &writer.latencies["up"];
        let outage: Vec<Duration> = ["down", "hanging"]
            .iter()
            .flat_map(|phase| writer.latencies[phase].iter().copied())
            .collect();
        let (base_p50, out_p50) = (percentile(baseline, 50), percentile(&outage, 50));
        let out_max = percentile(&outage, 100);
        figures
            .add("operations (writes)", writer.written)
            .add("acknowledged", writer.written)
            .add("lost", observations.abs_diff(writer.written * 2))
            .add(
                "write p50 up / outage",
                format!("{base_p50:.1} / {out_p50:.1} ms"),
            )
            .add("write max in outage", format!("{out_max:.1} ms"))
            .add(
                "first search down / hanging",
                format!("{first_down:.2?} / {first_hang:.2?}"),
            )
            .add(
                "paused searches",
                format!("{paused_down:.2?} / {paused_hang:.2?} / {paused_a:.2?}"),
            )
            .add("coverage full after", format!("{recovery:.1?}"))
            .add("texts embedded", documents);
        figures.print();
        assert_eq!(observations, writer.written * 2);
        assert_eq!(documents, observations, "every observation embedded");
        assert!(
            out_p50 <= base_p50 * 3.0 + 25.0,
            "writes slowed down in the outage: p50 {out_p50:.1} ms against {base_p50:.1} ms"
        );
        assert!(
            out_max < 2_000.0,
            "a write took {out_max:.0} ms in the outage"
        );
    })
    .await;
}

/// Texts the embedder refuses in one workspace (200) hold up no other workspace: the other's
/// 50 ordinary texts reach full coverage within a minute, while the refused ones are set
/// aside and listed (`get_stats.rejected_texts`).
pub async fn refused_texts_in_one_workspace_starve_no_other(backend: Backend) {
    bounded(Duration::from_secs(240), async {
        let ollama = FakeOllama::start(Duration::ZERO).await;
        let store = Store::fresh(backend).await;
        crate::harness::binary::run_ok(&["workspace", "create", "other"], &store.url).await;
        let server = Server::start(&store, &Embedder::Ollama(ollama.url()), "server").await;
        let refusing = server.client().await;
        let other = Mcp::connect(&server.base, "other").await.expect("a client");
        let mut figures = Figures::new(format!("{backend:?}/refused texts, other workspace"));

        for batch in 0..20 {
            let entities: Vec<Value> = (0..10)
                .map(|i| {
                    json!({"name": format!("refused-{batch}-{i}"), "entity_type": "note",
                        "observations": [format!("{REJECTED} text {batch} {i}")]})
                })
                .collect();
            refusing
                .ok("create_entities", json!({"entities": entities}))
                .await;
        }
        // The refused texts get a head start: the indexer is busy with them when the other
        // workspace's texts arrive.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let started = Instant::now();
        let entities: Vec<Value> = (0..50)
            .map(|i| {
                json!({"name": format!("ordinary-{i}"), "entity_type": "note",
                    "observations": [format!("an ordinary note number {i}")]})
            })
            .collect();
        other
            .ok("create_entities", json!({"entities": entities}))
            .await;
        let took = wait_for_full_coverage(&other, Duration::from_secs(60)).await;
        figures.add(
            "other workspace fully embedded (s)",
            format!("{:.1}", took.as_secs_f64()),
        );
        let refused = refusing.ok("get_stats", json!({})).await;
        figures.add("refused set aside by then", &refused["rejected_texts"]);
        assert!(started.elapsed() < Duration::from_secs(60));
        // The refused ones are found out (each alone, after halving its batches) and listed.
        let listed = Instant::now();
        loop {
            let stats = refusing.ok("get_stats", json!({})).await;
            if stats["rejected_texts"].as_u64().unwrap_or(0) > 0 {
                break;
            }
            assert!(
                listed.elapsed() < Duration::from_secs(30),
                "none set aside: {stats}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        figures.print();
    })
    .await;
}
