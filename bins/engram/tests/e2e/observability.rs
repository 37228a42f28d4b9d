//! What an operator sees: Prometheus metrics on their own listener (counting tool calls,
//! sessions and the indexer's state), JSON logs with one span per tool call and no memory
//! contents, and the viewer's JSON API with the same token rules as `/mcp`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::scenario::{ok, tool_error};
use crate::server::{Backend, TestServer, streamable_client};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_until_up(url: &str) {
    crate::server::install_tls_provider();
    let started = Instant::now();
    while reqwest::get(url).await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{url} did not come up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of the sample `name{labels}` in a Prometheus text page.
fn sample(page: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| {
            line.starts_with(name)
                && line[name.len()..].starts_with(['{', ' '])
                && labels
                    .iter()
                    .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

pub async fn metrics_count_calls_sessions_and_coverage_and_logs_keep_contents_out(
    backend: Backend,
) {
    // A database of its own, not a test server's: that server's indexer would embed the
    // observation first and leave this one's counter at nothing.
    let dir = tempfile::tempdir().unwrap();
    let database_url = match backend {
        Backend::Postgres => engram_pg::testing::fresh_database().await,
        Backend::Sqlite => dir.path().join("engram.db").display().to_string(),
    };
    let (port, metrics_port) = (free_port(), free_port());
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["serve", "--embedder", "local", "--log-format", "json"])
        .args(["--create-workspace", "demo"])
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .args(["--metrics-bind", &format!("127.0.0.1:{metrics_port}")])
        .env("ENGRAM_DATABASE_URL", &database_url)
        // Every level of every library: none may write what the memory holds.
        .env("ENGRAM_LOG", "trace,candle_core=info,tokenizers=info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Read the logs as they come: at trace level they would fill the pipe and stall the
    // server.
    let mut stderr = server.stderr.take().unwrap();
    let logs = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes).await;
        bytes
    });
    let base = format!("http://127.0.0.1:{port}");
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    wait_until_up(&format!("{base}/healthz")).await;
    wait_until_up(&metrics_url).await;

    let client = streamable_client(&base, "demo").await;
    let secret = "the secret observation text";
    ok(
        &client,
        "create_entities",
        json!({"entities": [
        {"name": "Alice", "entity_type": "person", "observations": [secret]}]}),
    )
    .await;
    ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    tool_error(
        &client,
        "set_summary",
        json!({"name": "Nobody", "summary": "x"}),
    )
    .await;
    // A tool name a client makes up is counted as `other`, never as a label of its own.
    let made_up = client
        .call_tool(rmcp::model::CallToolRequestParams::new("made_up_tool_x9"))
        .await;
    assert!(made_up.is_err(), "{made_up:?}");
    // Wait for the indexer to embed the observation.
    let started = Instant::now();
    let page = loop {
        let page = reqwest::get(&metrics_url)
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // The counter moves just after the vectors are stored: wait for both.
        if sample(&page, "engram_embedding_coverage", &[("workspace", "demo")]) == Some(1.0)
            && sample(&page, "engram_indexer_embedded_total", &[]).is_some()
        {
            break page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "coverage never reached 1: {page}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let calls = |tool, outcome| {
        sample(
            &page,
            "engram_tool_calls_total",
            &[("tool", tool), ("workspace", "demo"), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("create_entities", "ok"), Some(1.0), "{page}");
    assert_eq!(calls("open_nodes", "ok"), Some(2.0), "{page}");
    assert_eq!(calls("set_summary", "tool_error"), Some(1.0), "{page}");
    assert_eq!(calls("other", "error"), Some(1.0), "{page}");
    assert!(!page.contains("made_up_tool_x9"), "{page}");
    assert_eq!(
        sample(
            &page,
            "engram_tool_call_duration_seconds_count",
            &[("tool", "open_nodes")]
        ),
        Some(2.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            "engram_sessions_active",
            &[("transport", "streamable_http")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&page, "engram_indexer_backlog", &[("workspace", "demo")]),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &page,
            "engram_indexer_rejected_texts",
            &[("workspace", "demo")]
        ),
        Some(0.0)
    );
    assert!(
        sample(&page, "engram_indexer_embedded_total", &[]).is_some_and(|n| n >= 1.0),
        "{page}"
    );
    if backend == Backend::Postgres {
        assert!(
            sample(&page, "engram_db_pool_connections", &[("state", "open")])
                .is_some_and(|n| n >= 1.0)
        );
    }
    client.cancel().await.unwrap();

    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let logs = logs.await.unwrap();
    let logs = String::from_utf8_lossy(&logs);
    assert!(!logs.contains(secret), "memory contents in the logs");
    let calls: Vec<Value> = (logs.lines())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "tool call")
        .collect();
    assert_eq!(calls.len(), 5, "{logs}");
    assert!(
        !logs.contains("made_up_tool_x9"),
        "a made-up name in the logs"
    );
    assert_eq!(calls[0]["span"]["tool"], "create_entities");
    assert_eq!(calls[0]["span"]["workspace"], "demo");
    assert_eq!(calls[0]["fields"]["outcome"], "ok");
    assert!(calls[0]["fields"]["duration_ms"].as_f64().is_some());
    assert_eq!(calls[3]["fields"]["outcome"], "tool_error");
}

async fn get(url: &str, workspace: Option<&str>, token: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(workspace) = workspace {
        request = request.header("x-memory-workspace", workspace);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub async fn the_viewer_api_reads_a_workspace_behind_the_same_tokens(backend: Backend) {
    let server = TestServer::start_requiring_tokens(backend, &["demo", "other"]).await;
    let token = crate::auth::create_token(
        &server.database_url,
        &["--workspace", "demo", "--read-only"],
    );
    let api = |path: &str| format!("{}/ui/api/{path}", server.base);

    // The page loads without a token; its API does not answer without one.
    let page = reqwest::get(format!("{}/ui", server.base)).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("cytoscape.min.js"));
    let script = reqwest::get(format!("{}/ui/vendor/cytoscape.min.js", server.base))
        .await
        .unwrap();
    assert!(
        script.text().await.unwrap().len() > 100_000,
        "cytoscape is served from the binary"
    );
    assert_eq!(get(&api("workspaces"), None, None).await.0, 401);
    assert_eq!(
        get(&api("search?q=x"), Some("other"), Some(&token)).await.0,
        403
    );

    let (status, workspaces) = get(&api("workspaces"), None, Some(&token)).await;
    assert_eq!(
        (status, workspaces),
        (200, json!({"workspaces": [{"name": "demo"}]}))
    );

    let writer = crate::auth::create_token(&server.database_url, &["--workspace", "demo"]);
    let client =
        crate::server::streamable_client_with_token(&server.base, "demo", Some(&writer)).await;
    ok(&client, "create_entities", json!({"entities": [
        {"name": "Alice", "entity_type": "person", "observations": ["moved to Lisbon in March"], "summary": "a person"},
        {"name": "engram", "entity_type": "project", "observations": ["a memory server"]}]})).await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [
        {"from_entity": "Alice", "to_entity": "engram", "relation_type": "works_on"}]}),
    )
    .await;
    client.cancel().await.unwrap();

    let (status, found) = get(&api("search?q=Lisbon"), Some("demo"), Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(found["results"][0]["name"], "Alice");
    let (status, node) = get(&api("node?name=Alice"), Some("demo"), Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(
        node["node"]["observations"][0]["content"],
        "moved to Lisbon in March"
    );
    assert_eq!(
        node["neighborhood"]["relations"][0]["relation_type"],
        "works_on"
    );
    assert_eq!(
        get(&api("node?name=Nobody"), Some("demo"), Some(&token))
            .await
            .0,
        404
    );
    let (status, report) = get(&api("report"), Some("demo"), Some(&token)).await;
    assert_eq!(status, 200);
    assert!(report["stale_summaries"].is_array(), "{report}");
    let (status, indexer) = get(&api("indexer"), Some("demo"), Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(
        (indexer["observations"].as_i64(), indexer["pairs"].as_i64()),
        (Some(2), Some(2)),
        "{indexer}"
    );
    assert_eq!(indexer["failed_texts"], json!([]), "{indexer}");
}

/// Runs `engram ARGS` on `database_url` and checks it succeeded.
fn engram_ok(database_url: &str, args: &[&str]) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .env("ENGRAM_DATABASE_URL", database_url)
        .env("ENGRAM_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
}

/// A scrape: status and page.
async fn scrape(url: &str, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Prometheus' own parser (`promtool check metrics`, Debian's `prometheus` package, which
/// `cargo xtask test` installs) accepts the page.
fn promtool_accepts(page: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; `cargo xtask test` installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    // Status 1 is a parse error, 3 a lint remark (a counter without `_total`, a metric
    // without help): the page must have neither.
    assert!(
        output.status.success(),
        "promtool refused the page: {}{}\n{page}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// With tokens, a workspace's token scrapes that workspace's series only and the operator's
/// `--metrics-token` all of them; counters are on the page at 0 before anything happens; a
/// deleted or renamed workspace's series leave the page; Prometheus' parser reads it.
pub async fn metrics_show_each_token_its_own_workspace(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let database_url = match backend {
        Backend::Postgres => engram_pg::testing::fresh_database().await,
        Backend::Sqlite => dir.path().join("engram.db").display().to_string(),
    };
    for name in ["alpha", "beta"] {
        engram_ok(&database_url, &["workspace", "create", name]);
    }
    let operator = "operator-secret-0123456789abcdef";
    let (port, metrics_port) = (free_port(), free_port());
    let _server = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["serve", "--embedder", "none", "--require-auth"])
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .args(["--metrics-bind", &format!("127.0.0.1:{metrics_port}")])
        .env("ENGRAM_METRICS_TOKEN", operator)
        .env("ENGRAM_DATABASE_URL", &database_url)
        .env("ENGRAM_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    wait_until_up(&format!("http://127.0.0.1:{port}/healthz")).await;
    wait_until_up(&metrics_url).await;

    assert_eq!(scrape(&metrics_url, None).await.0, 401);
    let (status, page) = scrape(&metrics_url, Some(operator)).await;
    assert_eq!(status, 200, "{page}");
    promtool_accepts(&page);
    for (name, labels) in [
        ("engram_indexer_embedded_total", &[][..]),
        ("engram_indexer_failures_total", &[]),
        ("engram_sessions_active", &[("transport", "sse")]),
        (
            "engram_tool_calls_total",
            &[
                ("tool", "open_nodes"),
                ("workspace", "beta"),
                ("outcome", "ok"),
            ],
        ),
    ] {
        assert_eq!(
            sample(&page, name, labels),
            Some(0.0),
            "{name} {labels:?}: {page}"
        );
    }

    let alpha = crate::auth::create_token(&database_url, &["--workspace", "alpha"]);
    let client = crate::server::streamable_client_with_token(
        &format!("http://127.0.0.1:{port}"),
        "alpha",
        Some(&alpha),
    )
    .await;
    ok(&client, "get_stats", json!({})).await;
    let (status, page) = scrape(&metrics_url, Some(&alpha)).await;
    assert_eq!(status, 200, "{page}");
    let calls = &[
        ("tool", "get_stats"),
        ("workspace", "alpha"),
        ("outcome", "ok"),
    ];
    assert_eq!(
        sample(&page, "engram_tool_calls_total", calls),
        Some(1.0),
        "{page}"
    );
    assert!(
        !page.contains("beta"),
        "a token sees another workspace: {page}"
    );
    promtool_accepts(&page);
    client.cancel().await.unwrap();

    engram_ok(&database_url, &["workspace", "delete", "beta", "--force"]);
    engram_ok(&database_url, &["workspace", "rename", "alpha", "gamma"]);
    let (_, page) = scrape(&metrics_url, Some(operator)).await;
    assert!(
        !page.contains("workspace=\"beta\"") && !page.contains("workspace=\"alpha\""),
        "series of a deleted and a renamed workspace stay: {page}"
    );
    assert_eq!(
        sample(
            &page,
            "engram_tool_calls_total",
            &[
                ("tool", "get_stats"),
                ("workspace", "gamma"),
                ("outcome", "ok")
            ]
        ),
        Some(0.0),
        "{page}"
    );
    // Only `ok` is registered ahead for every tool: one series per tool and workspace, the
    // error outcomes with their first count.
    let gamma_series = (page.lines())
        .filter(|l| l.starts_with("engram_tool_calls_total{") && l.contains("workspace=\"gamma\""))
        .count();
    assert_eq!(
        gamma_series,
        engram_mcp::EngramServer::tool_names().len() + 1,
        "{page}"
    );
    assert!(
        !page.contains("tool=\"get_stats\",workspace=\"gamma\",outcome=\"tool_error\""),
        "{page}"
    );
    promtool_accepts(&page);
}
