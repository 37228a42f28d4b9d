//! The real `engram` binary serving newline-delimited JSON-RPC over TCP (`serve --tcp`): an
//! rmcp client over the socket, and raw lines as `nc` or `socat` send them.

use std::process::{Child, Command, Stdio};

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::auth::create_token;
use crate::scenario::exercise_every_tool_and_close;
use crate::server::{Backend, TestServer};

/// The binary serving `database_url` over TCP (and HTTP) on free loopback ports with `extra`
/// arguments, killed when dropped.
struct TcpServer {
    child: Child,
    address: String,
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TcpServer {
    async fn start(database_url: &str, extra: &[&str]) -> Self {
        let port = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let (http, tcp) = (
            format!("127.0.0.1:{}", port()),
            format!("127.0.0.1:{}", port()),
        );
        let mut args = vec!["serve", "--bind", &http, "--tcp", &tcp];
        args.extend(extra);
        let child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(&args)
            .env("ENGRAM_DATABASE_URL", database_url)
            .env("ENGRAM_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Self {
            child,
            address: tcp,
        };
        for _ in 0..200 {
            if TcpStream::connect(&server.address).await.is_ok() {
                return server;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("engram did not listen on {}", server.address);
    }

    async fn connect(&self) -> Lines {
        let (read, write) = TcpStream::connect(&self.address)
            .await
            .unwrap()
            .into_split();
        Lines {
            read: BufReader::new(read),
            write,
        }
    }
}

/// A raw connection: one JSON value per line each way.
struct Lines {
    read: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
}

impl Lines {
    /// Sends `line`; a connection the server closed is seen by [`Lines::receive`].
    async fn send(&mut self, line: &str) {
        let _ = self.write.write_all(format!("{line}\n").as_bytes()).await;
    }

    /// The next line as JSON, `None` once the server closed the connection.
    async fn receive(&mut self) -> Option<Value> {
        let mut line = String::new();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            self.read.read_line(&mut line),
        );
        match read.await.expect("an answer in time") {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap()),
        }
    }

    /// `method` with `params` as request `id`, and its answer.
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&request.to_string()).await;
        self.receive().await.expect("an answer")
    }

    /// `initialize` with `meta` as its `_meta`, and its answer.
    async fn initialize(&mut self, meta: Value) -> Value {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "lines", "version": "1"},
            "_meta": meta,
        });
        self.call(0, "initialize", params).await
    }
}

fn error_message(answer: &Value) -> &str {
    answer["error"]["message"].as_str().unwrap_or_default()
}

/// Every tool through rmcp's client over the socket, bound by `--workspace`.
pub async fn every_tool_over_tcp(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let every = ["--workspace", "demo", "--tools", "all"];
    let tcp = TcpServer::start(&server.database_url, &every).await;
    let stream = TcpStream::connect(&tcp.address).await.unwrap();
    exercise_every_tool_and_close(().serve(stream).await.unwrap()).await;
}

/// With tokens required, a connection's `initialize` binds it to its token's workspace, with
/// its token's access; anything else is refused with the fix and closed. A line that is no
/// JSON-RPC is answered with a parse error and the connection goes on; an over-long one ends it.
pub async fn tcp_connections_are_bound_by_their_token(backend: Backend) {
    let server = TestServer::start(backend, &["demo", "other"]).await;
    let url = &server.database_url;
    let writer = format!("Bearer {}", create_token(url, &["--workspace", "demo"]));
    let reader = create_token(url, &["--workspace", "demo", "--read-only"]);
    let args = [
        "--require-auth",
        "--max-body-bytes",
        "4096",
        "--embedder",
        "none",
    ];
    let tcp = TcpServer::start(url, &args).await;

    for (meta, refusal) in [
        (json!({}), "requires a token"),
        (json!({"authorization": "Bearer engram_wrong"}), "unknown"),
        (
            json!({"authorization": writer, "x-memory-workspace": "other"}),
            "does not grant",
        ),
    ] {
        let mut lines = tcp.connect().await;
        let answer = lines.initialize(meta.clone()).await;
        assert_eq!(answer["id"], 0, "{answer}");
        assert_eq!(answer["error"]["code"], -32001, "{meta}: {answer}");
        assert!(error_message(&answer).contains(refusal), "{meta}: {answer}");
        assert_eq!(
            lines.receive().await,
            None,
            "{meta}: closed after the refusal"
        );
    }
    let mut lines = tcp.connect().await;
    let answer = lines.call(1, "tools/list", json!({})).await;
    assert!(error_message(&answer).contains("`initialize`"), "{answer}");
    // Before it is bound, a connection's line is short: no token buys a large buffer.
    let mut lines = tcp.connect().await;
    lines.send(&"x".repeat(70_000)).await;
    let long = lines.receive().await.unwrap();
    assert!(
        error_message(&long).contains("65536 bytes before initialize"),
        "{long}"
    );
    assert_eq!(
        lines.receive().await,
        None,
        "closed after the long first line"
    );

    let mut lines = tcp.connect().await;
    let answer = lines.initialize(json!({"authorization": writer})).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "engram", "{answer}");
    lines
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    let entities = json!({"entities": [{"name": "Ada", "entityType": "person",
        "observations": ["Ada writes the compiler"]}]});
    let created = lines
        .call(
            2,
            "tools/call",
            json!({"name": "create_entities", "arguments": entities}),
        )
        .await;
    assert_eq!(created["result"]["isError"], false, "{created}");
    lines.send("not json").await;
    let garbled = lines.receive().await.unwrap();
    assert_eq!(garbled["error"]["code"], -32700, "{garbled}");
    let opened = lines
        .call(
            3,
            "tools/call",
            json!({"name": "open_nodes", "arguments": {"names": ["Ada"]}}),
        )
        .await;
    let text = opened["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Ada writes the compiler"), "{opened}");
    lines.send(&"x".repeat(5000)).await;
    let long = lines.receive().await.unwrap();
    assert!(error_message(&long).contains("over 4096 bytes"), "{long}");
    assert_eq!(lines.receive().await, None, "closed after the long line");

    let mut lines = tcp.connect().await;
    // The keys as HTTP writes its headers.
    let meta = json!({"Authorization": format!("bearer {reader}"), "X-Memory-Workspace": "demo"});
    let answer = lines.initialize(meta).await;
    assert!(answer["result"].is_object(), "{answer}");
    let listed = lines.call(4, "tools/list", json!({})).await;
    let names: Vec<&str> = (listed["result"]["tools"].as_array().unwrap().iter())
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"open_nodes"), "{names:?}");
    assert!(!names.contains(&"create_entities"), "{names:?}");
}

/// At most 128 connections at once: the next is told so and closed, and a slot freed by a
/// closed connection serves a new one.
pub async fn tcp_connections_are_bounded(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let args = ["--workspace", "demo", "--embedder", "none"];
    let tcp = TcpServer::start(&server.database_url, &args).await;
    let mut open = Vec::new();
    for _ in 0..128 {
        let mut lines = tcp.connect().await;
        let answer = lines.initialize(json!({})).await;
        assert!(answer["result"].is_object(), "{answer}");
        open.push(lines);
    }
    let mut refused = tcp.connect().await;
    let answer = refused.receive().await.expect("a refusal");
    assert!(
        error_message(&answer).contains("128 connections"),
        "{answer}"
    );
    assert_eq!(refused.receive().await, None);
    drop(open.pop());
    for attempt in 0.. {
        let mut lines = tcp.connect().await;
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "lines", "version": "1"}});
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
        lines.send(&request.to_string()).await;
        let answer = lines.receive().await.unwrap_or_default();
        if answer["result"].is_object() {
            break;
        }
        assert!(attempt < 100, "no slot was freed: {answer}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
