//! `OllamaEmbedder` against a small Ollama-compatible `/api/embed` server.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use engram_domain::{Embedder, Error};
use engram_embed::OllamaEmbedder;
use serde_json::{Value, json};

use crate::{dot, norm};

/// What the fake server has seen, and how it misbehaves.
#[derive(Default)]
struct Fake {
    /// The `input` of every call, in order.
    calls: Mutex<Vec<Vec<String>>>,
    /// Calls still to answer with a 500.
    failures: AtomicUsize,
    /// The dimension of the vectors it returns (0 means 8).
    dimension: AtomicUsize,
    /// Answer one vector fewer than asked.
    drop_one: std::sync::atomic::AtomicBool,
}

impl Fake {
    fn calls(&self) -> Vec<Vec<String>> {
        self.calls.lock().unwrap().clone()
    }
}

/// A deterministic vector for `text`, deliberately not of unit length.
fn fake_vector(text: &str, dimension: usize) -> Vec<f32> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    (0..dimension)
        .map(|i| ((hash >> (i % 56)) & 0xff) as f32 + 1.0)
        .collect()
}

fn unit(mut vector: Vec<f32>) -> Vec<f32> {
    let length = norm(&vector);
    vector.iter_mut().for_each(|x| *x /= length);
    vector
}

async fn embed(State(fake): State<Arc<Fake>>, Json(request): Json<Value>) -> Response {
    let input: Vec<String> = match &request["input"] {
        Value::String(text) => vec![text.clone()],
        other => serde_json::from_value(other.clone()).unwrap(),
    };
    fake.calls.lock().unwrap().push(input.clone());
    let failing = fake
        .failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        let error = json!({"error": "transient failure"});
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(error)).into_response();
    }
    let dimension = match fake.dimension.load(Ordering::SeqCst) {
        0 => 8,
        n => n,
    };
    let mut embeddings: Vec<Vec<f32>> = input
        .iter()
        .map(|text| fake_vector(text, dimension))
        .collect();
    if fake.drop_one.load(Ordering::SeqCst) {
        embeddings.pop();
    }
    Json(json!({"model": request["model"], "embeddings": embeddings})).into_response()
}

/// Starts the fake server; returns its URL and its state.
async fn serve() -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let app = Router::new()
        .route("/api/embed", post(embed))
        .with_state(Arc::clone(&fake));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fake)
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text number {i}")).collect()
}

fn quick_retries(embedder: OllamaEmbedder, attempts: u32) -> OllamaEmbedder {
    embedder.with_retries(
        NonZeroU32::new(attempts).unwrap(),
        Duration::from_millis(10),
    )
}

#[tokio::test]
async fn model_id_names_the_model() {
    let embedder = OllamaEmbedder::new("http://127.0.0.1:11434", "nomic-embed-text").unwrap();
    assert_eq!(embedder.model_id(), "ollama/nomic-embed-text");
}

#[tokio::test]
async fn batches_of_at_most_64_texts_in_order() {
    let (url, fake) = serve().await;
    let embedder = OllamaEmbedder::new(&url, "all-minilm").unwrap();
    let input = texts(100);
    let vectors = embedder.embed_documents(&input).await.unwrap();

    let calls = fake.calls();
    assert_eq!(calls.iter().map(Vec::len).collect::<Vec<_>>(), [64, 36]);
    assert_eq!(
        calls.concat(),
        input,
        "no prefix for a model other than nomic-embed-text"
    );
    assert_eq!(vectors.len(), 100);
    for (text, vector) in input.iter().zip(&vectors) {
        assert_eq!(vector, &unit(fake_vector(text, 8)));
    }
}

#[tokio::test]
async fn empty_input_makes_no_call() {
    let (url, fake) = serve().await;
    let embedder = OllamaEmbedder::new(&url, "nomic-embed-text").unwrap();
    assert!(embedder.embed_documents(&[]).await.unwrap().is_empty());
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn nomic_embed_text_gets_its_document_and_query_prefixes() {
    let (url, fake) = serve().await;
    let embedder = OllamaEmbedder::new(&url, "nomic-embed-text:v1.5").unwrap();
    let document = embedder
        .embed_documents(&["Alice moved to Lisbon".to_owned()])
        .await
        .unwrap();
    let query = embedder.embed_query("where is Alice").await.unwrap();

    assert_eq!(
        fake.calls(),
        [
            vec!["search_document: Alice moved to Lisbon".to_owned()],
            vec!["search_query: where is Alice".to_owned()],
        ]
    );
    assert_eq!(
        document[0],
        unit(fake_vector("search_document: Alice moved to Lisbon", 8))
    );
    assert_eq!(query, unit(fake_vector("search_query: where is Alice", 8)));
}

#[tokio::test]
async fn vectors_are_normalised() {
    let (url, _fake) = serve().await;
    let embedder = OllamaEmbedder::new(&url, "mxbai-embed-large").unwrap();
    let vectors = embedder.embed_documents(&texts(5)).await.unwrap();
    for vector in vectors {
        assert!((norm(&vector) - 1.0).abs() < 1e-5, "norm {}", norm(&vector));
    }
    let query = embedder.embed_query("a query").await.unwrap();
    assert!((dot(&query, &query) - 1.0).abs() < 1e-5);
}

#[tokio::test]
async fn dimension_is_learnt_from_the_first_answer_and_then_enforced() {
    let (url, fake) = serve().await;
    let embedder = OllamaEmbedder::new(&url, "all-minilm").unwrap();
    assert_eq!(embedder.dimension(), None);
    fake.dimension.store(12, Ordering::SeqCst);
    let vector = embedder.embed_query("first").await.unwrap();
    assert_eq!(vector.len(), 12);
    assert_eq!(embedder.dimension(), Some(12));

    fake.dimension.store(5, Ordering::SeqCst);
    let err = embedder.embed_query("second").await.unwrap_err();
    assert!(
        matches!(&err, Error::Internal(message) if message.contains("dimension 5, expected 12")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_wrong_vector_count_is_internal() {
    let (url, fake) = serve().await;
    fake.drop_one.store(true, Ordering::SeqCst);
    let embedder = OllamaEmbedder::new(&url, "all-minilm").unwrap();
    let err = embedder.embed_documents(&texts(3)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Internal(message) if message.contains("2 vectors for 3 texts")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_transient_500_is_retried() {
    let (url, fake) = serve().await;
    fake.failures.store(1, Ordering::SeqCst);
    let embedder = quick_retries(OllamaEmbedder::new(&url, "all-minilm").unwrap(), 3);
    let vector = embedder.embed_query("hello").await.unwrap();
    assert_eq!(vector, unit(fake_vector("hello", 8)));
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn a_lasting_error_answer_is_unavailable_after_one_retry() {
    let (url, fake) = serve().await;
    fake.failures.store(usize::MAX, Ordering::SeqCst);
    // Four attempts allowed, but an answered error is tried twice: a text the model refuses
    // is refused on every try, and the indexer halving a refused batch must not wait.
    let embedder = quick_retries(OllamaEmbedder::new(&url, "all-minilm").unwrap(), 4);
    let err = embedder.embed_query("hello").await.unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable(message) if message.contains("transient failure")),
        "{err:?}"
    );
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn unavailable_when_nothing_listens() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let embedder = quick_retries(OllamaEmbedder::new(&url, "nomic-embed-text").unwrap(), 2);
    let err = embedder.embed_query("hello").await.unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable(message) if message.contains("ollama pull nomic-embed-text")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_host_without_scheme_is_read_as_ollama_reads_it() {
    let (url, fake) = serve().await;
    let address = url.trim_start_matches("http://");
    let embedder = OllamaEmbedder::new(address, "all-minilm").unwrap();
    embedder.embed_query("hello").await.unwrap();
    assert_eq!(fake.calls().len(), 1);
    let defaults = [
        ("127.0.0.1", "http://127.0.0.1:11434/"),
        ("0.0.0.0:1234", "http://0.0.0.0:1234/"),
        ("http://example.com", "http://example.com/"),
        ("https://example.com/ollama", "https://example.com/ollama/"),
    ];
    for (host, url) in defaults {
        assert_eq!(OllamaEmbedder::new(host, "all-minilm").unwrap().url(), url);
    }
}

#[tokio::test]
async fn a_bad_host_is_an_invalid_argument() {
    for host in ["not a url", "ftp://example.com"] {
        let err = OllamaEmbedder::new(host, "nomic-embed-text").err().unwrap();
        assert!(
            matches!(&err, Error::InvalidArgument { field, .. } if field == "host"),
            "{err:?}"
        );
    }
}
