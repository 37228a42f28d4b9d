//! The real `engram` binary over stdio, as Claude Desktop runs it.

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;

use crate::scenario::exercise_every_tool_and_close;
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
