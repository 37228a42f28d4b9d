//! Tokens over both HTTP transports: 401 without or with a bad, revoked or expired token (the
//! same answer each time), 403 for another workspace's token, read-only tokens refused on
//! tools that write, and a non-loopback bind that requires tokens by default.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::scenario::{ok, tool_error};
use crate::server::{Backend, TestServer, streamable_client_with_token};
use crate::sse_client;

/// `engram token create` against the server's store; returns the printed token.
pub fn create_token(database_url: &str, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args([&["token", "create"], args].concat())
        .env("ENGRAM_DATABASE_URL", database_url)
        .env("ENGRAM_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn revoke(database_url: &str, token: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["token", "revoke", token])
        .env("ENGRAM_DATABASE_URL", database_url)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// A raw `initialize` POST to `/mcp` in `workspace`, with `token` when given.
pub fn initialize(
    http: &reqwest::Client,
    base: &str,
    workspace: &str,
    token: Option<&str>,
) -> reqwest::RequestBuilder {
    let post = http
        .post(format!("{base}/mcp"))
        .header("x-memory-workspace", workspace)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        );
    match token {
        Some(token) => post.bearer_auth(token),
        None => post,
    }
}

/// Status and body of a raw `initialize` POST to `/mcp` (and of a `GET /sse`).
async fn raw(base: &str, workspace: &str, token: Option<&str>) -> (u16, u16, String) {
    let http = reqwest::Client::new();
    let post = initialize(&http, base, workspace, token);
    let mut get = http
        .get(format!("{base}/sse"))
        .header("x-memory-workspace", workspace)
        .header("accept", "text/event-stream");
    if let Some(token) = token {
        get = get.bearer_auth(token);
    }
    let post = post.send().await.unwrap();
    let status = post.status().as_u16();
    let challenge = post
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = post.text().await.unwrap();
    if status == 401 {
        assert_eq!(challenge.as_deref(), Some("Bearer realm=\"engram\""));
    }
    let sse = get.send().await.unwrap().status().as_u16();
    (status, sse, body)
}

pub async fn tokens_grant_one_workspace_and_read_only_tokens_only_read(backend: Backend) {
    let server = TestServer::start_requiring_tokens(backend, &["demo", "other"]).await;
    let url = &server.database_url;
    let writer = create_token(url, &["--workspace", "demo", "--label", "agent"]);
    let reader = create_token(url, &["--workspace", "demo", "--read-only"]);
    let other = create_token(url, &["--workspace", "other"]);

    // The viewer's page loads without a token, but carries no workspace's data then.
    let page = reqwest::get(format!("{}/ui?workspace=demo", server.base))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("<title>engram</title>") && !page.contains("first-view"));

    // Without a token, with a malformed or a forged one: 401 on both transports, same words.
    let (status, sse, missing) = raw(&server.base, "demo", None).await;
    assert_eq!((status, sse), (401, 401), "{missing}");
    let forged = format!("{}0", &writer[..writer.len() - 1]);
    let forged = if forged == writer {
        format!("{}1", &writer[..writer.len() - 1])
    } else {
        forged
    };
    for bad in ["nonsense", forged.as_str()] {
        let (status, sse, body) = raw(&server.base, "demo", Some(bad)).await;
        assert_eq!((status, sse, &body), (401, 401, &missing), "{bad}");
    }
    // Another workspace's token: 403, whether or not the workspace exists.
    for workspace in ["demo", "no-such-workspace"] {
        let (status, sse, body) = raw(&server.base, workspace, Some(&other)).await;
        assert_eq!((status, sse), (403, 403), "{body}");
        assert!(
            body.contains("does not grant that workspace") && !body.contains("other"),
            "{body}"
        );
    }

    // The right token works on both transports.
    let client = streamable_client_with_token(&server.base, "demo", Some(&writer)).await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entity_type": "person"}]}),
    )
    .await;
    let sse = sse_client::connect_with_token(&server.base, "demo", Some(&writer)).await;
    ok(
        &sse,
        "add_observations",
        json!({"observations": [{"entity_name": "Alice", "contents": ["likes tea"]}]}),
    )
    .await;

    // A read-only token reads, and is refused (as a tool error that says why) when it writes.
    for read_only in [
        streamable_client_with_token(&server.base, "demo", Some(&reader)).await,
        sse_client::connect_with_token(&server.base, "demo", Some(&reader)).await,
    ] {
        // It is offered only the tools that change nothing.
        let listed = read_only.list_all_tools().await.unwrap();
        assert_eq!(
            listed.len(),
            24,
            "{:?}",
            listed.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        for tool in &listed {
            let read = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
            assert_eq!(
                read,
                Some(true),
                "{} listed to a read-only token",
                tool.name
            );
        }
        let opened = ok(&read_only, "open_nodes", json!({"names": ["Alice"]})).await;
        assert_eq!(
            opened["entities"][0]["observations"][0]["content"],
            "likes tea"
        );
        ok(
            &read_only,
            "search_nodes",
            json!({"query": "tea", "mode": "text"}),
        )
        .await;
        let refused = tool_error(
            &read_only,
            "set_summary",
            json!({"name": "Alice", "summary": "x"}),
        )
        .await;
        assert!(refused.contains("read-only"), "{refused}");
        read_only.cancel().await.unwrap();
    }
    let opened = ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(
        opened["entities"][0]["summary"],
        Value::Null,
        "the refused write wrote nothing"
    );

    // Revoked: refused from the next request on, on an open session too.
    revoke(url, &writer);
    let (status, _, _) = raw(&server.base, "demo", Some(&writer)).await;
    assert_eq!(status, 401);
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("get_stats"))
        .await;
    assert!(
        result.is_err(),
        "a revoked token's session is refused: {result:?}"
    );
    let result = sse
        .call_tool(rmcp::model::CallToolRequestParams::new("get_stats"))
        .await;
    assert!(
        result.is_err() || result.is_ok_and(|r| r.is_error == Some(true)),
        "sse after revocation"
    );

    // An expired token is refused like any other bad token.
    let brief = create_token(url, &["--workspace", "demo", "--expires", "1s"]);
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let (status, _, body) = raw(&server.base, "demo", Some(&brief)).await;
    assert_eq!((status, &body), (401, &missing));
    // And `token list` says so.
    let listed = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["token", "list"])
        .env("ENGRAM_DATABASE_URL", url)
        .env("ENGRAM_LOG", "warn")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let row = |token: &str| {
        let id = token
            .trim_start_matches("engram_")
            .split('_')
            .next()
            .unwrap();
        (listed.lines())
            .find(|line| line.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id} in {listed}"))
            .to_owned()
    };
    assert!(row(&brief).contains(" expired "), "{}", row(&brief));
    // The revoked token stays listed, as revoked.
    assert!(row(&writer).contains(" revoked "), "{}", row(&writer));
}

/// `engram serve` on a non-loopback address requires tokens unless told otherwise.
pub async fn a_non_loopback_bind_requires_tokens(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    for (extra, expected) in [(None, 401), (Some("--insecure-no-auth"), 400)] {
        let port = std::net::TcpListener::bind("0.0.0.0:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bind = format!("0.0.0.0:{port}");
        let mut args = vec!["serve", "--bind", bind.as_str(), "--embedder", "none"];
        args.extend(extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(&args)
            .env("ENGRAM_DATABASE_URL", &server.database_url)
            .env("ENGRAM_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let mut status = 0;
        for _ in 0..100 {
            if let Ok(response) = reqwest::Client::new()
                .post(format!("{base}/mcp"))
                .header("accept", "application/json, text/event-stream")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
                .send()
                .await
            {
                status = response.status().as_u16();
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Without a token: 401; with tokens switched off, on to the workspace check (400).
        assert_eq!(status, expected, "{args:?}");
    }
}

/// A guesser gets 401 for each wrong token, then 429 for the rest of the minute; another
/// address is not affected.
pub async fn failed_token_checks_are_throttled_per_address(backend: Backend) {
    let server = TestServer::start_requiring_tokens(backend, &["demo"]).await;
    let token = create_token(&server.database_url, &["--workspace", "demo"]);
    let from = |octet: u8| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from([127, 0, 0, octet]))
            .build()
            .unwrap()
    };
    let status = |client: reqwest::Client, token: String| {
        let url = format!("{}/sse", server.base);
        async move {
            let response = client
                .get(url)
                .header("x-memory-workspace", "demo")
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.headers().get("retry-after").cloned(),
            )
        }
    };
    let guesser = from(7);
    for guess in 0..engram::http::FAILED_CHECKS_PER_WINDOW {
        let (code, _) = status(guesser.clone(), format!("engram_wrong{guess}")).await;
        assert_eq!(code, 401, "guess {guess}");
    }
    let (code, retry) = status(guesser.clone(), "engram_wrong".into()).await;
    assert_eq!(code, 429);
    assert!(retry.is_some());
    // Even the right token waits, from that address; from another it works.
    assert_eq!(status(guesser, token.clone()).await.0, 429);
    assert_eq!(status(from(8), token).await.0, 200);
}

/// Who wrote what: each write is recorded with its token's label (or `token ID` for a token
/// without one), on both transports, and `get_history` shows it beside each entry.
pub async fn writes_are_recorded_with_their_token_s_label(backend: Backend) {
    let server = TestServer::start_requiring_tokens(backend, &["demo"]).await;
    let url = &server.database_url;
    let alice = create_token(url, &["--workspace", "demo", "--label", "alice's laptop"]);
    let unnamed = create_token(url, &["--workspace", "demo"]);
    let by_alice = streamable_client_with_token(&server.base, "demo", Some(&alice)).await;
    ok(
        &by_alice,
        "create_entities",
        json!({"entities": [{"name": "Deploy", "entity_type": "process"}]}),
    )
    .await;
    let by_unnamed = streamable_client_with_token(&server.base, "demo", Some(&unnamed)).await;
    ok(
        &by_unnamed,
        "add_observations",
        json!({"observations": [{"entity_name": "Deploy", "contents": ["runs at noon"]}]}),
    )
    .await;
    let over_sse = sse_client::connect_with_token(&server.base, "demo", Some(&alice)).await;
    ok(
        &over_sse,
        "add_observations",
        json!({"observations": [{"entity_name": "Deploy", "contents": ["needs a review"]}]}),
    )
    .await;

    let history = ok(&by_alice, "get_history", json!({"name": "Deploy"})).await;
    let author_of = |operation: &str, content: Option<&str>| -> Value {
        let entries = history["events"].as_array().expect("events");
        let entry = entries
            .iter()
            .find(|e| e["operation"] == operation && content.is_none_or(|c| e["content"] == c))
            .unwrap_or_else(|| panic!("no {operation} {content:?} in {history}"));
        entry["author"].clone()
    };
    assert_eq!(
        author_of("created", None),
        json!("alice's laptop"),
        "{history}"
    );
    let id = unnamed.split('_').nth(1).unwrap_or_default();
    let unnamed_author = author_of("observation_added", Some("runs at noon"));
    assert!(
        unnamed_author
            .as_str()
            .is_some_and(|a| a.starts_with("token ") && id.starts_with(&a[6..])),
        "{unnamed_author} for {unnamed}"
    );
    assert_eq!(
        author_of("observation_added", Some("needs a review")),
        json!("alice's laptop"),
        "{history}"
    );
    // Search results carry no author.
    let found = ok(&by_alice, "search_nodes", json!({"query": "Deploy"})).await;
    assert!(!found.to_string().contains("alice"), "{found}");
}
