//! `get_consolidation_report` with its texts from an Ollama-compatible `/api/generate` server
//! (`engram_embed::testing::FakeOllama`): in time, and too slow for the report's budget.

use std::sync::Arc;
use std::time::{Duration, Instant};

use engram_domain::GenerationBudget;
use engram_embed::OllamaGenerator;
use engram_embed::testing::{FakeOllama, FakeReply};
use serde_json::json;

use crate::scenario::{ok, tool_error};
use crate::server::{Backend, TestServer};

async fn server_with_ollama(backend: Backend, fake: &FakeOllama, budget: Duration) -> TestServer {
    let generator = Arc::new(OllamaGenerator::new(fake.url(), "llama3.2").unwrap());
    let budget = GenerationBudget {
        total: budget,
        concurrency: 2,
    };
    TestServer::start_with_generator(backend, &["demo"], Some((generator, budget))).await
}

const CAROL: &str = r#"{"entities": [{"name": "Carol", "entity_type": "person",
    "observations": ["reviews engram code", "lives in Porto"]}]}"#;

pub async fn drafts_come_from_the_model_when_it_answers_in_time(backend: Backend) {
    let fake = FakeOllama::start(FakeReply::Echo("Carol reviews code.".into())).await;
    let server = server_with_ollama(backend, &fake, Duration::from_secs(60)).await;
    let client = server.streamable_client("demo").await;
    let entities: serde_json::Value = serde_json::from_str(CAROL).unwrap();
    ok(&client, "create_entities", entities).await;

    let report = ok(&client, "get_consolidation_report", json!({})).await;
    let stale = &report["stale_summaries"][0];
    assert_eq!(stale["name"], "Carol");
    assert_eq!(stale["draft_summary"], "Carol reviews code. Summary:");
    assert_eq!(stale["draft_source"], "llm");
    assert_eq!(stale["observation_count"], 2);
    assert_eq!(report["event_summary"]["creates"], 3);
    assert!(
        !report["notices"].to_string().contains("llama3.2"),
        "{report}"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0]["model"], "llama3.2");
    let prompt = requests[0]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("- reviews engram code\n- lives in Porto"),
        "{prompt}"
    );

    let error = tool_error(&client, "get_consolidation_report", json!({"limit": 0})).await;
    assert!(error.contains("limit"), "{error}");
    client.cancel().await.unwrap();
}

pub async fn a_model_slower_than_the_budget_leaves_extractive_drafts(backend: Backend) {
    let fake = FakeOllama::start(FakeReply::Slow(Duration::from_secs(120), "late".into())).await;
    let server = server_with_ollama(backend, &fake, Duration::from_secs(1)).await;
    let client = server.streamable_client("demo").await;
    let entities: serde_json::Value = serde_json::from_str(CAROL).unwrap();
    ok(&client, "create_entities", entities).await;

    let started = Instant::now();
    let report = ok(&client, "get_consolidation_report", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let stale = &report["stale_summaries"][0];
    assert_eq!(stale["draft_source"], "extractive");
    assert_eq!(
        stale["draft_summary"],
        "reviews engram code; lives in Porto."
    );
    let notices = report["notices"].to_string();
    assert!(notices.contains("did not finish within 1 s"), "{notices}");
    client.cancel().await.unwrap();
}
