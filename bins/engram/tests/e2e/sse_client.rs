//! The client side of the legacy HTTP+SSE transport, as an rmcp (Sink, Stream) transport:
//! `GET /sse` for the event stream, whose `endpoint` event names where to POST messages.

use engram::http::WORKSPACE_HEADER;
use futures::StreamExt;
use futures::channel::mpsc;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use sse_stream::SseStream;

use crate::server::{Backend, Client};

/// Connects an rmcp client to `{base}/sse`, bound to `workspace`.
pub async fn connect(base: &str, workspace: &str) -> Client {
    connect_with_token(base, workspace, None).await
}

/// [`connect`], sending `Authorization: Bearer token` on every request when given.
pub async fn connect_with_token(base: &str, workspace: &str, token: Option<&str>) -> Client {
    crate::server::install_tls_provider();
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(token) = token {
        headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let response = http
        .get(format!("{base}/sse"))
        .header(WORKSPACE_HEADER, workspace)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "GET /sse");
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = events.next().await.unwrap().unwrap();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    let endpoint = endpoint.data.unwrap();
    assert!(
        endpoint.starts_with("/sse/messages/?session_id="),
        "{endpoint}"
    );
    let post_url = format!("{base}{endpoint}");

    let (to_client, from_server) = mpsc::unbounded::<ServerJsonRpcMessage>();
    tokio::spawn(async move {
        while let Some(Ok(event)) = events.next().await {
            if event.event.as_deref() == Some("message")
                && let Some(data) = event.data
            {
                let message = serde_json::from_str(&data).expect("server sends JSON-RPC");
                if to_client.unbounded_send(message).is_err() {
                    break;
                }
            }
        }
    });
    let workspace = workspace.to_owned();
    let to_server = futures::sink::unfold(
        (http, post_url, workspace),
        |(http, url, workspace), message: ClientJsonRpcMessage| async move {
            let response = http
                .post(&url)
                .header(WORKSPACE_HEADER, &workspace)
                .json(&message)
                .send()
                .await?;
            assert_eq!(response.status(), 202, "POST {url}");
            Ok::<_, reqwest::Error>((http, url, workspace))
        },
    );
    ().serve((Box::pin(to_server), from_server)).await.unwrap()
}

/// A session that was never opened is unknown: 404.
pub async fn unknown_session_is_not_found(backend: Backend) {
    let server = crate::server::TestServer::start(backend, &["alpha"]).await;
    let response = reqwest::Client::new()
        .post(format!("{}/sse/messages/?session_id=nope", server.base))
        .header(WORKSPACE_HEADER, "alpha")
        .json(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

/// Opens `{base}/sse` bound to `workspace`: the endpoint to post to, and the event stream
/// (after the `endpoint` event).
async fn open_stream(
    http: &reqwest::Client,
    base: &str,
    workspace: &str,
) -> (String, impl futures::Stream + use<>) {
    let response = http
        .get(format!("{base}/sse"))
        .header(WORKSPACE_HEADER, workspace)
        .send()
        .await
        .unwrap();
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = events.next().await.unwrap().unwrap().data.unwrap();
    (endpoint, events)
}

/// A message naming another workspace than its session's is refused.
pub async fn a_session_keeps_its_workspace(backend: Backend) {
    let server = crate::server::TestServer::start(backend, &["alpha", "beta"]).await;
    let http = reqwest::Client::new();
    let (endpoint, _events) = open_stream(&http, &server.base, "alpha").await;
    let response = http
        .post(format!("{}{endpoint}", server.base))
        .header(WORKSPACE_HEADER, "beta")
        .json(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body = response.text().await.unwrap();
    assert!(body.contains("bound to another workspace"), "{body}");
}

/// A client that opens a stream and never reads it is dropped once its session's queues are
/// full (503, then the session is gone), instead of the server buffering its answers without
/// limit; other clients carry on.
pub async fn a_client_that_does_not_read_its_stream_is_dropped(backend: Backend) {
    // A budget of 1 MiB of unread answers: some twenty tool lists.
    let guard = engram::http::Guard {
        unread: engram::http::UnreadBudget {
            per_session: 1 << 20,
            total: engram::http::MAX_UNREAD_BYTES,
        },
        ..engram::http::Guard::default()
    };
    let server = crate::server::TestServer::start_with_guard(backend, &["alpha"], guard).await;
    let http = reqwest::Client::new();
    let (endpoint, events) = open_stream(&http, &server.base, "alpha").await;
    let url = format!("{}{endpoint}", server.base);
    let post = |message: serde_json::Value| {
        let http = http.clone();
        let url = url.clone();
        async move {
            let response = (http.post(&url))
                .header(WORKSPACE_HEADER, "alpha")
                .json(&message)
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        }
    };
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                   "clientInfo": {"name": "never-reads", "version": "1"}}});
    assert_eq!(post(initialize).await, 202);
    assert_eq!(
        post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await,
        202
    );
    // tools/list answers are large (every schema): the socket's buffers fill fast.
    let mut refused_after = None;
    for id in 1..3_000 {
        let status =
            post(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})).await;
        // Answers take a moment; asks alone would outrun them.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        if status != 202 {
            assert_eq!(status, 503, "message {id}");
            refused_after = Some(id);
            break;
        }
    }
    let refused_after =
        refused_after.expect("a client that never reads was buffered without limit");
    // Closed, and its next message is told why.
    let again = post(serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "ping"})).await;
    assert_eq!(
        again, 503,
        "the session is closed after {refused_after} messages"
    );
    drop(events);

    let client = connect(&server.base, "alpha").await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(!tools.is_empty());
    client.cancel().await.unwrap();
}
