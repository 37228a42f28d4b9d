//! The real `engram` binary over stdio, as Claude Desktop runs it.

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use crate::scenario::{exercise_every_tool_and_close, ok};
use crate::server::{Backend, Client, TestServer};

/// An rmcp client of the real binary serving `workspace` of `database_url` over stdio, with
/// every tool (`--tools all`).
pub async fn client(database_url: &str, workspace: &str) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    command
        .args([
            "serve",
            "--stdio",
            "--tools",
            "all",
            "--workspace",
            workspace,
            "--database-url",
        ])
        .arg(database_url)
        .env("ENGRAM_LOG", "warn");
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

pub async fn every_tool_over_stdio(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    exercise_every_tool_and_close(client(&server.database_url, "demo").await).await;
}

/// The running server writes what reads returned, off the request path: a read over stdio is in
/// the store once the access log's period has passed (both nodes read, found together).
pub async fn the_server_writes_what_reads_returned(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = client(&server.database_url, "demo").await;
    let people = json!({"entities": [
        {"name": "Ada", "entity_type": "person"}, {"name": "Bo", "entity_type": "person"}]});
    ok(&client, "create_entities", people).await;
    ok(&client, "open_nodes", json!({"names": ["Ada", "Bo"]})).await;
    let location = engram::backend::Location::parse(Some(&server.database_url)).unwrap();
    let timeout = std::time::Duration::from_secs(30);
    let store = (engram::backend::Store::open(&location, timeout).await)
        .unwrap()
        .shared();
    let ws = (engram_domain::Memory::new(store.clone()).workspace("demo"))
        .await
        .unwrap()
        .id;
    let names = ["Ada".to_owned(), "Bo".to_owned()];
    let read = || async { store.node_use(ws, &names, "Ada").await.unwrap() };
    tokio::time::sleep(engram::indexing::ACCESS_EVERY + std::time::Duration::from_secs(2)).await;
    let mut used: Vec<(String, i64, i64)> = (read().await.into_iter())
        .map(|u| (u.name, u.reads, u.together))
        .collect();
    used.sort();
    assert_eq!(used, [("Ada".into(), 1, 0), ("Bo".into(), 1, 1)]);
    client.cancel().await.unwrap();
}
