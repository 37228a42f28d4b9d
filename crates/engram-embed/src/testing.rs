//! An Ollama-compatible `/api/generate` server inside a test (feature `testing`), for the
//! generation path end to end without a real model.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

/// How the fake server answers every `/api/generate` call.
#[derive(Debug, Clone)]
pub enum FakeReply {
    /// `"<prefix> <the prompt's last line>"` at once.
    Echo(String),
    /// The same after a delay, to exercise time budgets.
    Slow(Duration, String),
    /// An error status with Ollama's `{"error": …}` body.
    Error(StatusCode),
}

/// A running fake Ollama server on a loopback port; it stops with the test's runtime.
pub struct FakeOllama {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl FakeOllama {
    /// Starts a server answering with `reply`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(reply: FakeReply) -> Self {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/api/generate", post(generate))
            .with_state((reply, Arc::clone(&requests)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, requests }
    }

    /// `http://127.0.0.1:PORT`, for `OLLAMA_HOST`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON body of every request so far, in order of arrival.
    ///
    /// # Panics
    /// When a request handler panicked while holding the log.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

type Shared = (FakeReply, Arc<Mutex<Vec<Value>>>);

async fn generate(State((reply, requests)): State<Shared>, Json(body): Json<Value>) -> Response {
    requests.lock().unwrap().push(body.clone());
    let last_line = body["prompt"]
        .as_str()
        .and_then(|p| p.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .to_owned();
    let prefix = match reply {
        FakeReply::Echo(prefix) => prefix,
        FakeReply::Slow(delay, prefix) => {
            tokio::time::sleep(delay).await;
            prefix
        }
        FakeReply::Error(status) => {
            let error = json!({"error": format!("model \"{}\" not found", body["model"])});
            return (status, Json(error)).into_response();
        }
    };
    Json(json!({
        "model": body["model"],
        "created_at": "2026-11-22T00:00:00Z",
        "response": format!("{prefix} {last_line}"),
        "done": true,
    }))
    .into_response()
}
