//! The `engram` server as a library: the binary parses configuration and calls these, and
//! the end-to-end tests start the same server on `127.0.0.1:0`.

pub mod backend;
pub mod http;
pub mod indexing;
pub mod tcp;

use engram_domain::{Memory, Workspace};
use engram_mcp::{Binding, EngramServer};
use rmcp::ServiceExt;

/// Serves `tools` over stdin/stdout, bound to `workspace`, until the client closes stdin.
/// Logs must go to stderr: stdout carries the protocol.
pub async fn serve_stdio(
    memory: Memory,
    workspace: Workspace,
    tools: &engram_mcp::ToolSet,
) -> anyhow::Result<()> {
    let server = EngramServer::new(memory, Binding::Fixed(workspace)).with_tools(tools);
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
