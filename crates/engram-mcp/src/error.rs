//! The one mapping from domain errors to MCP: what a model can fix becomes a tool result
//! with `isError: true`; outages and bugs become JSON-RPC errors, logged here once.

use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};

/// A failed tool call.
#[derive(Debug)]
pub struct ToolError(pub engram_domain::Error);

impl From<engram_domain::Error> for ToolError {
    fn from(error: engram_domain::Error) -> Self {
        Self(error)
    }
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        if self.0.is_caller_error() {
            let message = self.0.to_string();
            return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
        }
        tracing::error!(error = %self.0, "tool call failed");
        Err(ErrorData::internal_error(self.0.for_clients(), None))
    }
}

/// A domain error as the JSON-RPC error of a prompt or resource request (these have no
/// `isError` result): a missing node is "resource not found" (-32002), a bad argument
/// "invalid params", anything else an internal error, logged here.
pub fn protocol_error(error: engram_domain::Error) -> ErrorData {
    let message = error.to_string();
    match error {
        engram_domain::Error::NotFound { .. } => ErrorData::resource_not_found(message, None),
        error if error.is_caller_error() => ErrorData::invalid_params(message, None),
        error => {
            tracing::error!(error = %message, "prompt or resource request failed");
            ErrorData::internal_error(error.for_clients(), None)
        }
    }
}
