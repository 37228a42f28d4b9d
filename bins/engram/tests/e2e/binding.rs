//! Workspace binding, refusals before any tool runs, isolation, Host/Origin guard, health.

use engram::http::WORKSPACE_HEADER;
use serde_json::json;

use crate::scenario::ok;
use crate::server::{Backend, TestServer};

fn initialize() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}})
}

async fn post_mcp(server: &TestServer, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}/mcp", server.base))
        .header("accept", "application/json, text/event-stream")
        .json(&initialize());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

pub async fn missing_malformed_and_unknown_workspaces_are_refused_with_the_fix(backend: Backend) {
    let server = TestServer::start(backend, &["alpha"]).await;
    let missing = post_mcp(&server, &[]).await;
    assert_eq!(missing.status(), 400);
    let body_missing = missing.text().await.unwrap();
    assert!(
        body_missing.contains("missing X-Memory-Workspace")
            && body_missing.contains("engram workspace create"),
        "{body_missing}"
    );

    let unknown = post_mcp(&server, &[(WORKSPACE_HEADER, "ghost")]).await;
    assert_eq!(unknown.status(), 400);
    let body_unknown = unknown.text().await.unwrap();
    assert!(
        body_unknown.contains("engram workspace create ghost"),
        "{body_unknown}"
    );

    let malformed = post_mcp(&server, &[(WORKSPACE_HEADER, "two words")]).await;
    assert_eq!(malformed.status(), 400);
    assert!(malformed.text().await.unwrap().contains("malformed"));

    // The legacy SSE endpoint refuses with the same JSON-RPC body, missing or unknown.
    for (header, refused_on_mcp) in [(None, body_missing), (Some("ghost"), body_unknown)] {
        let mut request = reqwest::Client::new().get(format!("{}/sse", server.base));
        if let Some(workspace) = header {
            request = request.header(WORKSPACE_HEADER, workspace);
        }
        let sse = request.send().await.unwrap();
        assert_eq!(sse.status(), 400);
        assert_eq!(
            sse.headers()["content-type"],
            "application/json",
            "{header:?}"
        );
        assert_eq!(sse.text().await.unwrap(), refused_on_mcp, "{header:?}");
    }
}

pub async fn a_streamable_session_keeps_its_workspace(backend: Backend) {
    let server = TestServer::start(backend, &["alpha", "beta"]).await;
    let started = post_mcp(&server, &[(WORKSPACE_HEADER, "alpha")]).await;
    assert_eq!(started.status(), 200);
    let session = started.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let switched = post_mcp(
        &server,
        &[(WORKSPACE_HEADER, "beta"), ("mcp-session-id", &session)],
    )
    .await;
    assert_eq!(switched.status(), 400);
    assert!(
        switched
            .text()
            .await
            .unwrap()
            .contains("bound to another workspace")
    );
}

pub async fn foreign_hosts_and_origins_are_refused(backend: Backend) {
    let server = TestServer::start(backend, &["alpha"]).await;
    let rebinding = post_mcp(
        &server,
        &[(WORKSPACE_HEADER, "alpha"), ("host", "evil.example:8765")],
    )
    .await;
    assert_eq!(rebinding.status(), 403);
    let cross_site = post_mcp(
        &server,
        &[
            (WORKSPACE_HEADER, "alpha"),
            ("origin", "https://evil.example"),
        ],
    )
    .await;
    assert_eq!(cross_site.status(), 403);
    // A loopback literal with a name glued on is not loopback.
    let glued = post_mcp(
        &server,
        &[(WORKSPACE_HEADER, "alpha"), ("host", "[::1]evil.example")],
    )
    .await;
    assert_eq!(glued.status(), 403);
    // Two Origins: refused whole, not judged by the first.
    let two_origins = post_mcp(
        &server,
        &[
            (WORKSPACE_HEADER, "alpha"),
            ("origin", "http://localhost:6274"),
            ("origin", "https://evil.example"),
        ],
    )
    .await;
    assert_eq!(two_origins.status(), 400);
    let local_page = post_mcp(
        &server,
        &[
            (WORKSPACE_HEADER, "alpha"),
            ("origin", "http://localhost:6274"),
        ],
    )
    .await;
    assert_eq!(local_page.status(), 200);
}

pub async fn healthz_reports_a_ready_database(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let response = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<serde_json::Value>().await.unwrap(),
        json!({"status": "ok"})
    );
    // Behind the Host check like every other route.
    let foreign = reqwest::Client::new()
        .get(format!("{}/healthz", server.base))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    // A path with a trailing slash (or any unknown one) says where things are.
    for (method, path) in [("POST", "/mcp/"), ("GET", "/sse/"), ("GET", "/nowhere")] {
        let method: reqwest::Method = method.parse().unwrap();
        let response = reqwest::Client::new()
            .request(method, format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body = response.text().await.unwrap();
        assert!(body.contains("engram serves MCP at /mcp"), "{path}: {body}");
        assert_eq!(
            body.contains("without the trailing slash"),
            path.ends_with('/'),
            "{path}: {body}"
        );
    }
    // The viewer's page: its own scripts only, never framed.
    let page = reqwest::get(format!("{}/ui", server.base)).await.unwrap();
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    // The server's address in a browser lands on the viewer.
    let root = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(root.status(), 303);
    assert_eq!(root.headers()["location"], "/ui");
    // An MCP client whose URL lacks `/mcp` is told where it is: its POST, and its event stream.
    let client = reqwest::Client::new();
    let requests = [
        client
            .post(format!("{}/", server.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        client
            .get(format!("{}/", server.base))
            .header("accept", "text/event-stream"),
    ];
    for request in requests {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 405);
        assert_eq!(response.headers()["allow"], "GET");
        let body = response.text().await.unwrap();
        assert!(body.contains("/mcp") && body.contains("/sse"), "{body}");
    }
}

pub async fn workspaces_stay_isolated_across_clients(backend: Backend) {
    let server = TestServer::start(backend, &["one", "two"]).await;
    let one = server.streamable_client("one").await;
    let two = crate::sse_client::connect(&server.base, "two").await;
    ok(&one, "create_entities", json!({"entities": [{"name": "Secret", "entity_type": "note", "observations": ["only in one"]}]})).await;
    let opened = ok(&two, "open_nodes", json!({"names": ["Secret"]})).await;
    assert_eq!(opened["not_found"], json!(["Secret"]));
    assert_eq!(ok(&two, "get_stats", json!({})).await["node_count"], 0);
    assert_eq!(ok(&one, "get_stats", json!({})).await["workspace"], "one");
    assert_eq!(ok(&two, "get_stats", json!({})).await["workspace"], "two");
    one.cancel().await.unwrap();
    two.cancel().await.unwrap();
}

/// Bodies that are not one JSON-RPC message get JSON-RPC's own answers: a body that is not
/// JSON is a parse error (400, -32700), a batch an invalid request (400, -32600).
pub async fn malformed_bodies_get_json_rpc_errors(backend: Backend) {
    let server = TestServer::start(backend, &["alpha"]).await;
    for (body, code) in [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":", -32700),
        (
            "[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]",
            -32600,
        ),
        // Not the JSON-RPC MCP speaks: each named, not a 415.
        (
            "{\"jsonrpc\": \"2.0\", \"id\": null, \"method\": \"ping\"}",
            -32600,
        ),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\", \"params\": [1]}",
            -32600,
        ),
        (
            "{\"jsonrpc\": \"1.0\", \"id\": 1, \"method\": \"ping\"}",
            -32600,
        ),
        ("\"ping\"", -32600),
    ] {
        let response = reqwest::Client::new()
            .post(format!("{}/mcp", server.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header(WORKSPACE_HEADER, "alpha")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let answer: serde_json::Value = response.json().await.unwrap();
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
    }
}

/// One answer read off a raw connection: its status and body (`Content-Length` framed).
async fn raw_answer(stream: &mut tokio::io::BufReader<tokio::net::TcpStream>) -> (u16, String) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let (mut status, mut length) = (0, 0);
    loop {
        let mut line = String::new();
        assert!(
            stream.read_line(&mut line).await.unwrap() > 0,
            "the connection closed"
        );
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(rest) = line.strip_prefix("HTTP/1.1 ") {
            status = rest[..3].parse().unwrap();
        } else if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// A request with both `Content-Length` and `Transfer-Encoding` is refused (400, naming
/// both), in either order and whatever the length says, also after other requests on the
/// same connection, framed each way; requests with one framing are not.
pub async fn both_framings_are_refused_on_a_raw_socket(backend: Backend) {
    use tokio::io::AsyncWriteExt;
    let server = TestServer::start(backend, &["alpha"]).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let head = |method: &str, path: &str, framing: &str| {
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\n{framing}\r\n")
    };
    let initialize = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}"#;
    let chunked = format!("{:x}\r\n{initialize}\r\n0\r\n\r\n", initialize.len());
    for (first, second) in [
        ("Content-Length: 4\r\n", "Transfer-Encoding: chunked\r\n"),
        ("Transfer-Encoding: chunked\r\n", "Content-Length: 999\r\n"),
    ] {
        let stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let mut stream = tokio::io::BufReader::new(stream);
        // One framing each, kept alive: answered as usual.
        let requests = [
            head("POST", "/healthz", "Content-Length: 5\r\n") + "hello",
            head("POST", "/healthz", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n",
            head("GET", "/healthz", ""),
        ];
        for request in &requests {
            stream
                .get_mut()
                .write_all(request.as_bytes())
                .await
                .unwrap();
            let (status, body) = raw_answer(&mut stream).await;
            assert_ne!(status, 400, "{request:?}: {body}");
        }
        let both = head(
            "POST",
            "/mcp",
            &format!(
                "X-Memory-Workspace: alpha\r\n\
            Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
            {first}{second}"
            ),
        ) + &chunked;
        stream.get_mut().write_all(both.as_bytes()).await.unwrap();
        let (status, body) = raw_answer(&mut stream).await;
        assert_eq!(status, 400, "{both:?}: {body}");
        assert!(
            body.contains("both Content-Length and Transfer-Encoding"),
            "{body}"
        );
    }
}
