//! End-to-end tests through real MCP clients: rmcp's client over Streamable HTTP, an rmcp
//! client over the legacy SSE transport (the client side in `sse_client`), and stdio against
//! the real `engram` binary. The server runs on `127.0.0.1:0` against a fresh PostgreSQL
//! database per test (`cargo xtask test` provides the server).

mod binding;
mod consolidation;
mod golden;
mod scenario;
mod server;
mod sse_client;
mod stdio;
