//! No tool stalls the server: two `propose_split` calls on a node of 2,000 facts (no embedding
//! model, so its words are grouped) run while `/healthz` is asked every 50 ms. Grouping runs on
//! a blocking thread, one analysis at a time per two cores, on the newest 1,000 facts and
//! within a budget: every health answer comes within a second, and both calls answer within the
//! call timeout, saying which facts they grouped. (Before, 2,000 facts took 72 s on the async
//! runtime, and two calls made `/healthz` wait 14.9 s.)

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Backend, Embedder, Figures, Server, Store, bounded};

const FACTS: usize = 2_000;
/// The slowest health answer allowed while the calls run.
const HEALTH_WITHIN: Duration = Duration::from_secs(1);
/// The longest a call may take ([`crate::harness::mcp::CALL_TIMEOUT`] is the server's too).
const CALL_WITHIN: Duration = Duration::from_secs(30);

/// A fact on one of four topics, in words of its own.
fn fact(i: usize) -> String {
    let topics = [
        [
            "storage",
            "tables",
            "PostgreSQL",
            "indexes",
            "replica",
            "vacuum",
        ],
        [
            "search",
            "scores",
            "ranking",
            "embeddings",
            "queries",
            "recall",
        ],
        [
            "releases",
            "versions",
            "changelog",
            "tags",
            "staging",
            "rollout",
        ],
        ["team", "lunch", "offsite", "birthday", "games", "coffee"],
    ];
    let words = topics[i % 4];
    format!(
        "note {i}: the {} {} {} with {} {} number {}",
        words[i % 6],
        words[(i / 4) % 6],
        words[(i / 24) % 6],
        words[(i / 7) % 6],
        words[(i / 11) % 6],
        i * 7919 % 10_007
    )
}

pub async fn propose_split_on_a_large_node_stalls_nothing(backend: Backend) {
    bounded(Duration::from_secs(240), async {
        let store = Store::fresh(backend).await;
        let server = Server::start(&store, &Embedder::None, "split").await;
        let client = server.client().await;
        client
            .ok(
                "create_entities",
                json!({"entities": [{"name": "notes", "entity_type": "note"}]}),
            )
            .await;
        for batch in (0..FACTS).collect::<Vec<_>>().chunks(500) {
            let contents: Vec<String> = batch.iter().map(|&i| fact(i)).collect();
            client
                .ok(
                    "add_observations",
                    json!({"observations": [{"entity_name": "notes", "contents": contents}]}),
                )
                .await;
        }
        let mut calls = Vec::new();
        for _ in 0..2 {
            let client = server.client().await;
            calls.push(tokio::spawn(async move {
                let started = Instant::now();
                let proposal = client.ok("propose_split", json!({"name": "notes"})).await;
                (proposal, started.elapsed())
            }));
        }
        let mut slowest = Duration::ZERO;
        while calls.iter().any(|call| !call.is_finished()) {
            let asked = Instant::now();
            let (status, body) = server.healthz().await;
            slowest = slowest.max(asked.elapsed());
            assert_eq!(status, 200, "{body}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut took = Vec::new();
        for call in calls {
            let (proposal, elapsed) = call.await.unwrap();
            assert!(elapsed < CALL_WITHIN, "propose_split took {elapsed:?}");
            let grouped: usize = (proposal["groups"].as_array().unwrap().iter())
                .map(|group| group["ordinals"].as_array().unwrap().len())
                .sum();
            assert_eq!(grouped, 1_000, "{proposal}");
            let notice = proposal["notice"].as_str().unwrap_or_default();
            assert!(notice.contains("newest 1000 facts"), "{proposal}");
            took.push(elapsed.as_secs_f64());
        }
        assert!(
            slowest < HEALTH_WITHIN,
            "/healthz waited {slowest:?} while propose_split ran"
        );
        Figures::new(format!(
            "{backend:?}/propose_split on {FACTS} facts, two at once"
        ))
        .add("slowest /healthz ms", slowest.as_millis())
        .add("calls s", format!("{:.1}, {:.1}", took[0], took[1]))
        .print();
    })
    .await;
}
