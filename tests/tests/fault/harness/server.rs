//! `engram serve` as a child process on a free loopback port.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Child;

use super::Store;
use super::mcp::Mcp;

/// The embedder a server uses.
#[derive(Debug, Clone)]
pub enum Embedder {
    /// `--embedder none`: full text only, no indexer.
    None,
    /// `--embedder ollama` at this URL (the fake in [`super::ollama`]).
    Ollama(String),
}

/// A running `engram serve`; killed (SIGKILL) when dropped. When the test is failing, the
/// end of its log is printed then.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its process id.
    pub pid: u32,
    workspace: &'static str,
    log: PathBuf,
}

/// Model name the fake Ollama serves (no document or query prefixes, unlike
/// `nomic-embed-text`).
pub const FAKE_MODEL: &str = "fault-embed";

impl Server {
    /// Starts `engram serve` on `store` and waits until `/healthz` answers 200. `name` names
    /// its log file in the test's directory.
    pub async fn start(store: &Store, embedder: &Embedder, name: &str) -> Self {
        Self::start_with(store, embedder, name, &[]).await
    }

    /// [`Server::start`] with more arguments for `engram serve`.
    pub async fn start_with(
        store: &Store,
        embedder: &Embedder,
        name: &str,
        extra: &[&str],
    ) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let log = store.dir.join(format!("{name}.log"));
        for _ in 0..5 {
            let port = free_port();
            let mut command = super::binary::command();
            command
                .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
                .args(["--database-url", &store.url])
                .args(extra)
                .env("ENGRAM_LOG", "info,rmcp=warn")
                .stdout(Stdio::null())
                .stderr(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&log)
                        .expect("the server's log file"),
                );
            match embedder {
                Embedder::None => {
                    command.args(["--embedder", "none"]);
                }
                Embedder::Ollama(url) => {
                    command
                        .args(["--embedder", "ollama", "--ollama-host", url])
                        .args(["--embed-model", FAKE_MODEL]);
                }
            }
            let child = command.spawn().expect("starting engram serve");
            let mut server = Self {
                pid: child.id().expect("a running child has an id"),
                child,
                base: format!("http://127.0.0.1:{port}"),
                workspace: store.workspace,
                log: log.clone(),
            };
            if server.wait_ready().await {
                return server;
            }
            // The port was taken between our probe and its bind: try another.
            assert!(
                server.log_text().contains("binding 127.0.0.1"),
                "engram serve exited at start:\n{}",
                server.log_text()
            );
        }
        panic!("no free port for engram serve");
    }

    /// Waits for `/healthz` to answer 200 (`true`), or the process to exit (`false`).
    async fn wait_ready(&mut self) -> bool {
        let started = Instant::now();
        let http = reqwest::Client::new();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            let answer = http
                .get(format!("{}/healthz", self.base))
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if answer.is_ok_and(|a| a.status() == 200) {
                return true;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "engram serve did not become ready within 60 s:\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new MCP client on the test's workspace.
    pub async fn client(&self) -> Mcp {
        Mcp::connect(&self.base, self.workspace)
            .await
            .unwrap_or_else(|error| panic!("connecting to {}: {error}", self.base))
    }

    /// `kill -9`: no shutdown, no flush, in-flight calls cut off.
    pub async fn kill9(&mut self) {
        self.child.start_kill().expect("sending SIGKILL");
        let status = self
            .child
            .wait()
            .await
            .expect("waiting for the killed server");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{status}"
        );
    }

    /// Sends SIGTERM (a graceful stop).
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends SIGINT, as Ctrl-C in a terminal does (a graceful stop).
    pub fn interrupt(&self) {
        self.signal("INT");
    }

    fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.pid.to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{name} {}", self.pid);
    }

    /// Waits for the process to exit, at most `limit`; its exit code.
    pub async fn exited_within(&mut self, limit: Duration) -> Option<i32> {
        let status = tokio::time::timeout(limit, self.child.wait()).await.ok()?;
        status.expect("waiting for the server").code()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `GET /healthz`: its status and body.
    pub async fn healthz(&self) -> (u16, String) {
        let answer = reqwest::Client::new()
            .get(format!("{}/healthz", self.base))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("GET /healthz");
        let status = answer.status().as_u16();
        (status, answer.text().await.unwrap_or_default())
    }

    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if std::thread::panicking() {
            let log = self.log_text();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "--- end of {} ---\n{}",
                self.log.display(),
                lines[lines.len().saturating_sub(40)..].join("\n")
            );
        }
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}
