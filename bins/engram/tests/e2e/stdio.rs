//! The real `engram` binary over stdio, as Claude Desktop runs it.

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;

use crate::scenario::exercise_every_tool_and_close;
use crate::server::{Backend, TestServer};

pub async fn every_tool_over_stdio(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    command
        .args(["serve", "--stdio", "--workspace", "demo", "--database-url"])
        .arg(&server.database_url)
        .env("ENGRAM_LOG", "warn");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    exercise_every_tool_and_close(client).await;
}
