//! How the HTTP layer refuses a request before it reaches MCP: a JSON-RPC error body with an
//! HTTP status, so that MCP clients show the message. Used by every layer (`auth`, `binding`,
//! `sessions`, `sse`), and itself using none of them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A JSON-RPC error body with an HTTP status, so MCP clients show the message: code -32603
/// (internal error) for a server-side status such as an unreachable database, -32600
/// (invalid request) for the others.
pub fn refuse(status: StatusCode, message: String) -> Response {
    let code = if status.is_server_error() {
        -32603
    } else {
        -32600
    };
    rpc_error(status, code, message)
}

/// A JSON-RPC error body with `code` and an HTTP status.
pub fn rpc_error(status: StatusCode, code: i32, message: String) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}
