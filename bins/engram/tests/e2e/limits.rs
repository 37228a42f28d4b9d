//! Bounded connections: one client holding many half-sent requests gets at most its share of
//! connections (the rest are closed at once), cannot lock another client out, and each
//! half-sent request is closed once the header read timeout passes.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server::{Backend, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_from_one_client_do_not_lock_others_out() {
    let server = TestServer::start(Backend::Sqlite, &["demo"]).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let per_address = engram::http::MAX_CONNECTIONS_PER_ADDRESS;

    // More half-sent requests than one address may hold, from 127.0.0.1.
    let mut held = Vec::new();
    for _ in 0..per_address + 16 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Memory-")
            .await
            .unwrap();
        held.push(stream);
    }
    // The ones over the share are closed at once (all looked at together, well within the
    // header read timeout): the read ends (no bytes, or reset) instead of waiting.
    let reads = held.iter_mut().map(|stream| async move {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        )
    });
    let closed = (futures::future::join_all(reads).await.into_iter())
        .filter(|closed| *closed)
        .count();
    assert_eq!(
        closed, 16,
        "the connections over {per_address} from one address are refused"
    );

    // Another client (another loopback address) is served as usual meanwhile.
    let other = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let started = Instant::now();
    let health = other
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    // A half-sent request holds its connection no longer than the header read timeout.
    let started = Instant::now();
    let mut first = held.remove(0);
    let mut buffer = [0u8; 512];
    let ended = tokio::time::timeout(
        engram::http::HEADER_READ_TIMEOUT + Duration::from_secs(5),
        first.read(&mut buffer),
    )
    .await;
    assert!(
        ended.is_ok(),
        "a half-sent request was held past the header read timeout"
    );
    assert!(started.elapsed() <= engram::http::HEADER_READ_TIMEOUT + Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_configured_size_are_refused() {
    let guard = engram::http::Guard {
        max_body_bytes: 4_096,
        ..engram::http::Guard::default()
    };
    let server = TestServer::start_with_guard(Backend::Sqlite, &["demo"], guard).await;
    let big = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "x".repeat(8_000), "version": "1"}}});
    let response = reqwest::Client::new()
        .post(format!("{}/mcp", server.base))
        .header("accept", "application/json, text/event-stream")
        .header("x-memory-workspace", "demo")
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096 bytes"),
        "{answer}"
    );
    // Under the limit, the same call is served.
    let client = server.streamable_client("demo").await;
    client.cancel().await.unwrap();
}
