//! What the fault tests share: the real binary ([`binary`]), servers as child processes
//! ([`server`]), an MCP client that reports every failure as a value ([`mcp`]), fresh stores
//! ([`store`]), a switchable fake Ollama ([`ollama`]), a private PostgreSQL cluster
//! ([`cluster`]), the graph read back and its invariants ([`graph`]), time bounds and the
//! figures each test prints.

pub mod binary;
pub mod cluster;
pub mod graph;
pub mod mcp;
pub mod ollama;
pub mod proxies;
pub mod server;
pub mod store;

use std::future::Future;
use std::time::{Duration, Instant};

pub use graph::Graph;
pub use mcp::{Mcp, Reply};
pub use server::{Embedder, Server};
pub use store::{Backend, Store};

/// Runs a test body within `limit`: a hang fails the test instead of holding up CI. The
/// binary is built (or found current) before the clock starts.
pub async fn bounded<F: Future<Output = ()>>(limit: Duration, body: F) {
    binary::engram();
    if tokio::time::timeout(limit, body).await.is_err() {
        panic!("the test did not finish within {limit:?}");
    }
}

/// The one line of figures a test prints (`fault: NAME: operations …, lost 0, …`).
pub struct Figures {
    name: String,
    started: Instant,
    fields: Vec<(String, String)>,
}

impl Figures {
    /// Starts the clock for the test `name` (`store/what`).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            started: Instant::now(),
            fields: Vec::new(),
        }
    }

    /// Adds `label value` to the line.
    pub fn add(&mut self, label: &str, value: impl std::fmt::Display) -> &mut Self {
        self.fields.push((label.to_owned(), value.to_string()));
        self
    }

    /// The time since [`Figures::new`].
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Prints the line, with the time since [`Figures::new`].
    pub fn print(&self) {
        let fields: Vec<String> = (self.fields.iter())
            .map(|(label, value)| format!("{label} {value}"))
            .collect();
        println!(
            "fault: {}: {}, elapsed {:.1} s",
            self.name,
            fields.join(", "),
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// A small deterministic generator (xorshift64*), so a failing run can be replayed.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next number below `bound` (> 0).
    pub fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let value = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (value >> 33) as usize % bound
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The `p`-th percentile (0–100) of `values`, in milliseconds.
pub fn percentile(values: &[Duration], p: usize) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort();
    let index = ((sorted.len() - 1) * p) / 100;
    sorted[index].as_secs_f64() * 1000.0
}
