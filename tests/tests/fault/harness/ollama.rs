//! A fake Ollama serving `/api/embed` (what engram's `OllamaEmbedder` calls) on a fixed
//! loopback port, with a switch: up (deterministic vectors at once), down (nothing listens:
//! connection refused) or hanging (requests are read and never answered, until the switch
//! moves on). It counts every text it embedded, so a test can tell what was embedded twice.
//!
//! A request holding a text with [`REJECTED`] is refused with 400 and the words Ollama uses
//! for an input it cannot take, as a real model refuses some texts while taking others.
//!
//! A small HTTP/1.1 server by hand (one request per connection, `Connection: close`): the
//! test controls exactly when the socket listens, answers or stays silent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The vectors' dimension (all-MiniLM-L6-v2's, the size engram's stores index first).
pub const DIMENSION: usize = 384;

/// A text holding this is refused (400), in any batch, whatever the mode.
pub const REJECTED: &str = "refused-by-the-embedder";

/// What the fake does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers at once (after the configured delay).
    Up,
    /// Nothing listens on the port: connections are refused, open ones closed.
    Down,
    /// Accepts and reads requests, never answers while hanging; when it is switched back
    /// up, the held requests are answered.
    Hanging,
}

/// A running fake; stops with the test's runtime.
pub struct FakeOllama {
    port: u16,
    shared: Arc<Shared>,
    accept: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    mode: watch::Sender<Mode>,
    delay: Duration,
    /// Every text embedded and answered, with how many times.
    texts: Mutex<HashMap<String, u32>>,
}

impl FakeOllama {
    /// Starts up, answering each request after `delay` (a model's time).
    pub async fn start(delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("its address").port();
        let fake = Self {
            port,
            shared: Arc::new(Shared {
                mode: watch::Sender::new(Mode::Up),
                delay,
                texts: Mutex::default(),
            }),
            accept: Mutex::new(None),
        };
        fake.listen(listener);
        fake
    }

    /// `http://127.0.0.1:PORT`, for `--ollama-host`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Switches to `mode`.
    pub async fn set(&self, mode: Mode) {
        if mode == Mode::Down {
            let accept = self.accept.lock().unwrap().take();
            if let Some(accept) = accept {
                // Dropping the task drops the listener and every open connection.
                accept.abort();
                let _ = accept.await;
            }
        } else if self.accept.lock().unwrap().is_none() {
            let listener = TcpListener::bind(("127.0.0.1", self.port))
                .await
                .expect("the fake Ollama's port again");
            self.listen(listener);
        }
        self.shared.mode.send_replace(mode);
    }

    /// How many texts were embedded and answered, repeats included.
    pub fn embedded(&self) -> u64 {
        let texts = self.shared.texts.lock().unwrap();
        texts.values().map(|&n| u64::from(n)).sum()
    }

    /// Every text embedded, with how many times.
    pub fn texts(&self) -> HashMap<String, u32> {
        self.shared.texts.lock().unwrap().clone()
    }

    fn listen(&self, listener: TcpListener) {
        let shared = self.shared.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                connections.spawn(serve(stream, shared.clone()));
                while connections.try_join_next().is_some() {}
            }
        });
        *self.accept.lock().unwrap() = Some(task);
    }
}

/// One connection: one request, one answer.
async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let Some((path, body)) = read_request(&mut stream).await else {
        return;
    };
    let mut mode = shared.mode.subscribe();
    while *mode.borrow_and_update() == Mode::Hanging {
        if mode.changed().await.is_err() {
            return;
        }
    }
    if path != "/api/embed" {
        return respond(&mut stream, 404, &json!({"error": "not found"})).await;
    }
    tokio::time::sleep(shared.delay).await;
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return respond(&mut stream, 400, &json!({"error": "not JSON"})).await;
    };
    let texts: Vec<String> = match &request["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => (items.iter())
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => return respond(&mut stream, 400, &json!({"error": "no input"})).await,
    };
    if texts.iter().any(|text| text.contains(REJECTED)) {
        let error = "the input length exceeds the context length";
        return respond(&mut stream, 400, &json!({ "error": error })).await;
    }
    let embeddings: Vec<Vec<f32>> = texts.iter().map(|text| embed(text)).collect();
    {
        let mut counted = shared.texts.lock().unwrap();
        for text in texts {
            *counted.entry(text).or_default() += 1;
        }
    }
    let answer = json!({"model": request["model"], "embeddings": embeddings});
    respond(&mut stream, 200, &answer).await;
}

/// Reads one request: its path and body (`Content-Length` bytes).
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let path = head.split_whitespace().nth(1)?.to_owned();
    let length: usize = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buffer[header_end..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Some((path, body))
}

async fn respond(stream: &mut TcpStream, status: u16, body: &Value) {
    let body = body.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A deterministic vector: a hashed bag of lowercase words, plus a constant so that no text
/// gets the zero vector.
pub fn embed(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0f32; DIMENSION];
    vector[0] = 0.1;
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in word.to_lowercase().bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        vector[(hash % DIMENSION as u64) as usize] += 1.0;
    }
    vector
}
