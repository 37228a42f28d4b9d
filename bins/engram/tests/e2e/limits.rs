//! Bounded connections and sessions: one client holding many half-sent requests gets at most
//! its share of connections (the rest are closed at once), cannot lock another client out, and
//! each half-sent request is closed once the header read timeout passes; sessions are capped
//! per address and in all, idle ones close; a request id already in flight is refused; a
//! trusted proxy names its clients (nobody else can); a body that trickles in gets 408.

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

/// `initialize` over raw HTTP from `client`: the status and the new session's id.
async fn open_session(client: &reqwest::Client, base: &str) -> (u16, Option<String>) {
    open_session_from(client, base, None).await
}

/// [`open_session`], claiming with `X-Forwarded-For` to come from `forwarded` when given.
async fn open_session_from(
    client: &reqwest::Client,
    base: &str,
    forwarded: Option<&str>,
) -> (u16, Option<String>) {
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "limits", "version": "1"}}});
    let mut request = client
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("x-memory-workspace", "demo");
    if let Some(forwarded) = forwarded {
        request = request.header("x-forwarded-for", forwarded);
    }
    let response = request.json(&initialize).send().await.unwrap();
    let session =
        (response.headers().get("mcp-session-id")).map(|id| id.to_str().unwrap().to_owned());
    let status = response.status().as_u16();
    if session.is_some() {
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(client, base, session.as_deref(), &initialized).await;
    }
    (status, session)
}

/// POSTs `message` to `/mcp` in `session`; the response, body unread.
async fn post(
    client: &reqwest::Client,
    base: &str,
    session: Option<&str>,
    message: &serde_json::Value,
) -> reqwest::Response {
    let mut request = client
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("x-memory-workspace", "demo")
        .header("mcp-protocol-version", "2025-06-18")
        .json(message);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.unwrap()
}

fn client_from(last_octet: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, last_octet]))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_address_and_in_all_and_idle_ones_close() {
    let guard = engram::http::Guard {
        sessions: engram::http::SessionLimits {
            max_sessions: 3,
            max_sessions_per_address: 2,
            idle: Duration::from_secs(2),
        },
        ..engram::http::Guard::default()
    };
    let server = TestServer::start_with_guard(Backend::Sqlite, &["demo"], guard).await;
    let base = server.base.as_str();
    let (one, two, three) = (client_from(1), client_from(2), client_from(3));

    let (status, first) = open_session(&one, base).await;
    assert_eq!(status, 200);
    let (status, second) = open_session(&one, base).await;
    assert_eq!(status, 200);
    // Over one address's share: 429, with the limit named and a time to retry.
    let refused = post(
        &one,
        base,
        None,
        &serde_json::json!({"jsonrpc": "2.0", "id": 0,
        "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}),
    )
    .await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 2"),
        "{body}"
    );
    // Another address still gets its session, until the server holds its three.
    let (status, _) = open_session(&two, base).await;
    assert_eq!(status, 200);
    let (status, _) = open_session(&three, base).await;
    assert_eq!(status, 503, "the fourth session over the server's three");
    // Legacy SSE streams count in the same total.
    let sse = three
        .get(format!("{base}/sse"))
        .header("x-memory-workspace", "demo")
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 503);

    // A closed session gives its place back.
    let closed = one
        .delete(format!("{base}/mcp"))
        .header("x-memory-workspace", "demo")
        .header("mcp-session-id", first.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    let (status, _) = open_session(&three, base).await;
    assert_eq!(status, 200, "the closed session's place is free again");

    // Sessions unused for the idle limit are closed: their requests get 404 (the client opens
    // a new session), and their places are free.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (status, fresh) = open_session(&one, base).await;
    assert_eq!(status, 200);
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let stale = post(&one, base, second.as_deref(), &list).await;
    assert_eq!(stale.status(), 404, "an idle session is closed");
    let live = post(&one, base, fresh.as_deref(), &list).await;
    assert_eq!(live.status(), 200);
    for client in [&two, &three] {
        let (status, _) = open_session(client, base).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_already_in_flight_is_refused_at_once() {
    use engram_embed::testing::{FakeOllama, FakeReply};
    // A consolidation report waits for its (slow) text model for its whole budget: a request
    // that stays in flight for two seconds.
    let fake = FakeOllama::start(FakeReply::Slow(Duration::from_secs(120), "late".into())).await;
    let generator =
        std::sync::Arc::new(engram_embed::OllamaGenerator::new(fake.url(), "llama3.2").unwrap());
    let budget = engram_domain::GenerationBudget {
        total: Duration::from_secs(2),
        concurrency: 1,
    };
    let server =
        TestServer::start_with_generator(Backend::Sqlite, &["demo"], Some((generator, budget)))
            .await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let (_, session) = open_session(&client, &base).await;
    let session = session.unwrap();
    let create = serde_json::json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params":
        {"name": "create_entities", "arguments": {"entities": [{"name": "Carol",
         "entity_type": "person", "observations": ["reviews engram code"]}]}}});
    let created = post(&client, &base, Some(&session), &create).await;
    assert!(created.text().await.unwrap().contains("Carol"));

    let report = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "get_consolidation_report", "arguments": {}}});
    let slow = tokio::spawn({
        let (client, base, session, report) = (
            client.clone(),
            base.clone(),
            session.clone(),
            report.clone(),
        );
        async move {
            let response = post(&client, &base, Some(&session), &report).await;
            (response.status().as_u16(), response.text().await.unwrap())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let twin = tokio::time::timeout(
        Duration::from_secs(10),
        post(&client, &base, Some(&session), &report),
    )
    .await
    .expect("the second request with the same id is answered at once");
    assert_eq!(twin.status(), 409);
    assert!(started.elapsed() < Duration::from_secs(1));
    let body: serde_json::Value = twin.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("id 7"),
        "{body}"
    );
    // The first request still gets its answer, and then its id is free again.
    let (status, text) = tokio::time::timeout(Duration::from_secs(30), slow)
        .await
        .expect("the first request is answered")
        .unwrap();
    assert_eq!(status, 200);
    assert!(text.contains("stale_summaries"), "{text}");
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    let again = post(&client, &base, Some(&session), &list).await;
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("create_entities"));
}

/// Opens a legacy SSE stream from `client` and returns it with its message endpoint.
async fn open_sse(client: &reqwest::Client, base: &str) -> (reqwest::Response, String) {
    let mut stream = client
        .get(format!("{base}/sse"))
        .header("x-memory-workspace", "demo")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    while !seen.contains("session_id=") || !seen.ends_with("\n\n") {
        let chunk = stream.chunk().await.unwrap().expect("the endpoint event");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let endpoint = (seen.lines())
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap()
        .trim()
        .to_owned();
    (stream, format!("{base}{endpoint}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_streams_and_half_sent_requests_do_not_starve_another_client() {
    use crate::scenario::ok;
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let server = TestServer::start(Backend::Sqlite, &["demo"]).await;
    let base = server.base.as_str();
    // The other client, an rmcp client on 127.0.0.2, and its latency on an idle server.
    let headers = std::collections::HashMap::from([(
        engram::http::WORKSPACE_HEADER.parse().unwrap(),
        "demo".parse().unwrap(),
    )]);
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(client_from(2), config);
    let other = ().serve(transport).await.unwrap();
    let entities = serde_json::json!({"entities": [{"name": "Ada", "entity_type": "person",
        "observations": ["writes the first program"]}]});
    ok(&other, "create_entities", entities).await;
    let open = serde_json::json!({"names": ["Ada"]});
    let mut idle = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        ok(&other, "open_nodes", open.clone()).await;
        idle.push(started.elapsed());
    }

    // One client on 127.0.0.1 holds 40 legacy SSE streams it never reads, each sent 20
    // requests whose answers pile up, and 20 half-sent requests.
    let greedy = client_from(1);
    let mut streams = Vec::new();
    for _ in 0..40 {
        let (stream, endpoint) = open_sse(&greedy, base).await;
        for id in 0..20 {
            let list = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
            let posted = greedy
                .post(&endpoint)
                .header("x-memory-workspace", "demo")
                .json(&list)
                .send()
                .await
                .unwrap();
            assert!(posted.status().is_success() || posted.status() == 503);
        }
        streams.push(stream);
    }
    let address = base.trim_start_matches("http://").to_owned();
    let mut half_sent = Vec::new();
    for _ in 0..20 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Memory-")
            .await
            .unwrap();
        half_sent.push(stream);
    }

    // Meanwhile the other client's calls keep their latency.
    let mut loaded = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        ok(&other, "open_nodes", open.clone()).await;
        loaded.push(started.elapsed());
    }
    idle.sort();
    loaded.sort();
    println!(
        "starvation: open_nodes p50 {:?} idle, {:?} with 40 unread streams (800 answers) and 20 \
         half-sent requests; max {:?}",
        idle[10], loaded[10], loaded[19]
    );
    assert!(
        loaded[10] <= idle[10] * 5 + Duration::from_millis(20),
        "p50 {:?} under load against {:?} idle",
        loaded[10],
        idle[10]
    );
    assert!(loaded[19] < Duration::from_secs(2), "max {:?}", loaded[19]);
    drop((streams, half_sent));
    other.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxy_names_its_clients_and_nobody_else_can() {
    let guard = engram::http::Guard {
        trusted_proxies: vec![std::net::IpAddr::from([127, 0, 0, 1])],
        sessions: engram::http::SessionLimits {
            max_sessions: 16,
            max_sessions_per_address: 1,
            idle: Duration::from_secs(60),
        },
        ..engram::http::Guard::default()
    };
    let server = TestServer::start_with_guard(Backend::Sqlite, &["demo"], guard).await;
    let base = server.base.as_str();
    let (proxy, other) = (client_from(1), client_from(2));
    // Behind the proxy, each client has its own share...
    let open = |client, forwarded| open_session_from(client, base, Some(forwarded));
    assert_eq!(open(&proxy, "203.0.113.1").await.0, 200);
    assert_eq!(open(&proxy, "198.51.100.9, 203.0.113.2").await.0, 200);
    assert_eq!(open(&proxy, "203.0.113.1").await.0, 429);
    // ...and a peer that is not trusted is counted as itself, whatever it claims.
    assert_eq!(open(&other, "203.0.113.3").await.0, 200);
    assert_eq!(open(&other, "203.0.113.4").await.0, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_in_is_refused_when_its_time_is_up() {
    let guard = engram::http::Guard {
        body_read_timeout: Duration::from_secs(1),
        ..engram::http::Guard::default()
    };
    let server = TestServer::start_with_guard(Backend::Sqlite, &["demo"], guard).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nX-Memory-Workspace: demo\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: 1000\r\n\r\n{{\"jsonrpc\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0_u8; 4096];
        loop {
            let n = stream.read(&mut buffer).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
            if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}}") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to a trickling body");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 1 s"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Sends `message` to `/mcp` in `session` over a connection with a small receive window,
/// and reads nothing: the answer stays in the server.
async fn ask_without_reading(
    address: &str,
    session: &str,
    message: &serde_json::Value,
) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(address.parse().unwrap()).await.unwrap();
    let body = message.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nX-Memory-Workspace: demo\r\n\
         Mcp-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    stream
}

/// Everything left on `stream` until the server closes it (a reset ends it too).
async fn read_rest(mut stream: tokio::net::TcpStream) -> String {
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut bytes));
    assert!(read.await.is_ok(), "the answer never ended");
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Whether an answer (a JSON body, or an SSE stream's events) holds a whole JSON-RPC result
/// for `id`.
fn holds_result(answer: &str, id: u64) -> bool {
    (answer.lines())
        .map(|line| line.strip_prefix("data: ").unwrap_or(line))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .any(|message| message["id"] == id && message["result"].is_object())
}

/// Streamable HTTP answers a client leaves unread count against the same byte budget as the
/// legacy SSE ones: a second large answer in a session whose first is still unread is cut
/// off; the first is delivered whole once read, and a client that reads gets every answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_streamable_answers_stay_within_the_byte_budget() {
    let guard = engram::http::Guard {
        unread: engram::http::UnreadBudget {
            per_session: 12 * 1024 * 1024,
            total: 64 * 1024 * 1024,
        },
        ..engram::http::Guard::default()
    };
    let server = TestServer::start_with_guard(Backend::Sqlite, &["demo"], guard).await;
    let client = server.streamable_client("demo").await;
    let summary = "s".repeat(4_000);
    // More than the kernel's largest send buffer (4 MB on Linux), so an unread answer stays
    // in the server.
    for batch in 0..10 {
        let entities: Vec<serde_json::Value> = (0..100)
            .map(|i| {
                serde_json::json!({"name": format!("n{batch}-{i}"), "entity_type": "big",
                                   "summary": summary})
            })
            .collect();
        crate::scenario::ok(
            &client,
            "create_entities",
            serde_json::json!({"entities": entities}),
        )
        .await;
    }
    client.cancel().await.unwrap();
    let ask = |id: u64| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "get_nodes_by_type", "arguments": {"entity_type": "big"}}})
    };
    let http = reqwest::Client::new();
    let (_, session) = open_session(&http, &server.base).await;
    let session = session.expect("a session");

    // Read at once: whole (about 2.5 MB, within the session's 3 MB).
    let whole = post(&http, &server.base, Some(&session), &ask(1)).await;
    let whole = whole.text().await.unwrap();
    assert!(
        whole.len() > 2_000_000 && holds_result(&whole, 1),
        "{}",
        whole.len()
    );

    let address = server.base.trim_start_matches("http://").to_owned();
    let first = ask_without_reading(&address, &session, &ask(2)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = ask_without_reading(&address, &session, &ask(3)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (first, second) = (read_rest(first).await, read_rest(second).await);
    assert!(
        holds_result(&first, 2),
        "the first unread answer is kept whole"
    );
    assert!(
        !holds_result(&second, 3),
        "a second unread answer past the session's budget is cut off ({} bytes came)",
        second.len()
    );
    // The session still serves a client that reads.
    let again = post(&http, &server.base, Some(&session), &ask(4)).await;
    assert!(holds_result(&again.text().await.unwrap(), 4));
}
