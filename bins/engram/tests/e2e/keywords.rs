//! Search for what agents send, with the default model over MCP (issue 57): a word that is in
//! one fact of a thousand is found by default (by `search_nodes`, `engram recall` and the
//! recall prompt), a type word alone lifts no node, of two current facts that match alike the
//! newer ranks first, and rows say which fact they matched and since when it holds.

use serde_json::{Value, json};

use crate::recall::wait_for_indexing;
use crate::scenario::ok;
use crate::server::{Backend, TestServer};

/// `count` facts of `count / 5` nodes about a software team's everyday work, none naming a
/// message broker: varied enough that their words and vectors spread as a real memory's do.
fn everyday_facts(count: usize) -> Vec<Value> {
    const SUBJECTS: [&str; 10] = [
        "The checkout page",
        "The nightly report job",
        "The search indexer",
        "The mobile login screen",
        "The billing export",
        "The image resizer",
        "The onboarding email",
        "The admin dashboard",
        "The audit log",
        "The feature flag service",
    ];
    const FACTS: [&str; 10] = [
        "was rewritten in sprint {n} to cut its latency",
        "is owned by squad {n} since the reorganisation",
        "logs a warning when a request takes over {n} seconds",
        "keeps {n} days of history before archiving",
        "was reviewed by the security team in week {n}",
        "has {n} open tickets in the backlog",
        "runs {n} replicas behind the load balancer",
        "was demoed to the customer advisory board in meeting {n}",
        "caches its results for {n} minutes",
        "needs a new owner after release {n}",
    ];
    (0..count / 5)
        .map(|node| {
            let subject = SUBJECTS[node % SUBJECTS.len()];
            let observations: Vec<String> = (0..5)
                .map(|i| {
                    let fact = FACTS[(node + i * 3) % FACTS.len()].replace("{n}", &(node * 5 + i).to_string());
                    format!("{subject} {fact}")
                })
                .collect();
            json!({"name": format!("note-{node:03}"), "entity_type": "note", "observations": observations})
        })
        .collect()
}

/// The node names of a search's results, in order.
fn names(found: &Value) -> Vec<String> {
    (found["results"].as_array().unwrap().iter())
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

pub async fn a_word_in_one_fact_of_a_thousand_is_found_by_default(backend: Backend) {
    let server = TestServer::start(backend, &["team"]).await;
    let client = server.streamable_client("team").await;
    let facts = everyday_facts(995);
    for batch in facts.chunks(100) {
        ok(&client, "create_entities", json!({"entities": batch})).await;
    }
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "order-events", "entity_type": "service", "observations": [
            "publishes every placed order to a Kafka topic for the warehouse",
            "was moved to the eu-west-1 region in March",
            "is written in Go 1.22",
            "retries a failed publish three times",
            "alerts the on-call engineer when its queue backs up",
        ]},
        // A name no fact repeats: found by its name.
        {"name": "CND-881", "entity_type": "bug", "observations": [
            "the nightly export drops rows when the disk fills up"]},
        ]}),
    )
    .await;
    wait_for_indexing(&client).await;

    for query in ["Kafka", "kafka", "eu-west-1", "Go 1.22"] {
        let found = ok(&client, "search_nodes", json!({"query": query})).await;
        assert_eq!(
            names(&found).first().map(String::as_str),
            Some("order-events"),
            "{query}: {found}"
        );
        let score = found["results"][0]["score"].as_f64().unwrap();
        assert!(score >= 0.8, "{query}: {found}");
    }
    let found = ok(&client, "search_nodes", json!({"query": "CND-881"})).await;
    assert_eq!(
        names(&found).first().map(String::as_str),
        Some("CND-881"),
        "{found}"
    );
    // A word that occurs nowhere finds nothing by default.
    let nothing = ok(&client, "search_nodes", json!({"query": "Cassandra"})).await;
    assert_eq!(nothing["results"], json!([]), "{nothing}");

    // The recall prompt and `engram recall` answer the word too.
    let text = crate::context::recall_prompt(&client, "Kafka").await;
    assert!(text.contains("Kafka topic for the warehouse"), "{text}");
    let base = server.base.as_str();
    let args = ["recall", "Kafka", "--workspace", "team", "--url", base];
    let recalled = crate::hooks::stdout(&crate::hooks::engram(&args, ""));
    assert!(recalled.contains("order-events"), "{recalled}");
    assert!(recalled.contains("Kafka topic"), "{recalled}");

    // Identical calls score alike, every list in score order.
    for tool in ["search_nodes", "search_observations"] {
        let asked = json!({"query": "kafka topic", "min_score": 0.0, "limit": 10});
        let (a, b) = (
            ok(&client, tool, asked.clone()).await,
            ok(&client, tool, asked).await,
        );
        assert_eq!(a, b, "{tool}: two identical calls differ");
        let rows = a["results"]
            .as_array()
            .or(a["observations"].as_array())
            .unwrap();
        let scores: Vec<f64> = rows.iter().map(|r| r["score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{tool}: {a}");
    }
    client.cancel().await.unwrap();
}

pub async fn a_type_word_lifts_nothing_and_the_newer_fact_comes_first(backend: Backend) {
    let server = TestServer::start(backend, &["team"]).await;
    let client = server.streamable_client("team").await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "atlas", "entity_type": "project", "observations": [
                "the office plants are watered on Fridays"]},
            {"name": "Dana Lee", "entity_type": "person", "observations": [
                "Dana Lee is the tech lead of atlas and decides its architecture"]},
            {"name": "api-gateway", "entity_type": "service", "observations": [
                {"content": "The API gateway runs on Kong 2.8", "valid_from": "2025-01-10T00:00:00Z"},
                {"content": "The API gateway runs on Kong 3.4", "valid_from": "2025-06-02T00:00:00Z"},
                {"content": "deploys of the gateway happen on Tuesdays", "valid_from": "2025-02-01T09:30:00Z"},
                {"content": "deploys of the gateway happen on Thursdays", "valid_from": "2025-09-15T16:45:10Z"},
            ]},
        ]}),
    )
    .await;
    wait_for_indexing(&client).await;

    // "project" is atlas's type: it says nothing about which project is asked for.
    let asked = json!({"query": "who is in charge of the project technically?", "min_score": 0.0});
    let found = ok(&client, "search_nodes", asked).await;
    let atlas = (found["results"].as_array().unwrap().iter()).find(|r| r["name"] == "atlas");
    if let Some(atlas) = atlas {
        let signals = atlas["signals"].as_array().cloned().unwrap_or_default();
        assert!(!signals.contains(&json!("named")), "{found}");
        assert!(atlas["score"].as_f64().unwrap() < 0.5, "{found}");
    }
    assert_eq!(names(&found)[0], "Dana Lee", "{found}");

    // Of two current facts that match alike, the newer first; rows say which and since when.
    for (query, newer, older, since) in [
        (
            "Kong",
            "The API gateway runs on Kong 3.4",
            "The API gateway runs on Kong 2.8",
            "2025-06-02",
        ),
        (
            "when do deploys of the gateway happen?",
            "deploys of the gateway happen on Thursdays",
            "deploys of the gateway happen on Tuesdays",
            "2025-09-15T16:45:10Z",
        ),
    ] {
        let asked = json!({"query": query, "min_score": 0.0});
        let found = ok(&client, "search_observations", asked).await;
        let rows = found["observations"].as_array().unwrap();
        let at = |content: &str| rows.iter().position(|r| r["content"] == content);
        assert!(at(newer).unwrap() < at(older).unwrap(), "{query}: {found}");
        let first = &rows[at(newer).unwrap()];
        assert_eq!(first["valid_from"], since, "{found}");
        assert!(first["ordinal"].as_u64().is_some(), "{found}");
        let nodes = ok(&client, "search_nodes", json!({"query": query})).await;
        let hit = &nodes["results"][0];
        assert_eq!(hit["matched_observation"], newer, "{query}: {nodes}");
        assert_eq!(hit["valid_from"], since, "{nodes}");
        assert_eq!(hit["ordinal"], first["ordinal"], "{nodes}");
    }
    client.cancel().await.unwrap();
}
