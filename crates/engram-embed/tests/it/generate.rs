//! `OllamaGenerator` against the Ollama-compatible `/api/generate` server of
//! `engram_embed::testing`.

use std::time::Duration;

use axum::http::StatusCode;
use engram_domain::{Error, TextGenerator};
use engram_embed::OllamaGenerator;
use engram_embed::testing::{FakeOllama, FakeReply};

#[tokio::test]
async fn one_unstreamed_bounded_call_per_prompt() {
    let fake = FakeOllama::start(FakeReply::Echo("draft:".into())).await;
    let generator = OllamaGenerator::new(fake.url(), "llama3.2").unwrap();
    assert_eq!(generator.model_id(), "ollama/llama3.2");
    let answer = generator.generate("Facts:\n- a\n\nSummary:").await.unwrap();
    assert_eq!(answer, "draft: Summary:");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request["model"], "llama3.2");
    assert_eq!(request["prompt"], "Facts:\n- a\n\nSummary:");
    assert_eq!(request["stream"], false);
    assert_eq!(request["options"]["num_predict"], 160);
    assert!((request["options"]["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
}

#[tokio::test]
async fn an_error_answer_is_unavailable_and_says_how_to_fix_it() {
    let fake = FakeOllama::start(FakeReply::Error(StatusCode::NOT_FOUND)).await;
    let generator = OllamaGenerator::new(fake.url(), "llama3.2").unwrap();
    let error = generator.generate("x").await.unwrap_err();
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("not found") && message.contains("ollama pull llama3.2"),
        "{message}"
    );
}

#[tokio::test]
async fn unavailable_when_nothing_listens() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let generator = OllamaGenerator::new(&url, "llama3.2").unwrap();
    let error = generator.generate("x").await.unwrap_err();
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
}

#[tokio::test]
async fn a_slow_answer_still_arrives_when_nobody_gives_up() {
    let fake = FakeOllama::start(FakeReply::Slow(Duration::from_millis(200), "late".into())).await;
    let generator = OllamaGenerator::new(fake.url(), "llama3.2").unwrap();
    assert_eq!(generator.generate("one\ntwo").await.unwrap(), "late two");
}

#[test]
fn bad_arguments_are_named() {
    let error = OllamaGenerator::new("ftp://x", "llama3.2").err().unwrap();
    assert!(error.to_string().contains("host"), "{error}");
    let error = OllamaGenerator::new("localhost", "").err().unwrap();
    assert!(error.to_string().contains("model"), "{error}");
}
