//! Every tool, published from the domain's own list ([`engram_domain::each_tool`]): each
//! tool's request type is its input (field docs become the JSON Schema descriptions a model
//! reads; unknown fields are refused; limits are checked by the tool itself), its output
//! type the structured result, its [`Effect`] the annotations. One generic route serves
//! them all: it parses the arguments (a bad one is a tool error naming it, see
//! [`crate::arguments`]), resolves the bound workspace, runs the tool through
//! [`engram_domain::Memory::call`] and returns the result as structured JSON.
//!
//! Input also accepts the field names of Anthropic's reference memory server
//! (`@modelcontextprotocol/server-memory`: `entityType`, `entityNames`, `entityName`, `from`,
//! `to`, `relationType`, and `observations` texts in `delete_observations`), so an agent
//! prompted for that server works unchanged. They are serde aliases that the published
//! schemas do not show: `tools/list` advertises the catalog's names only.

use engram_domain::{Effect, Tool, ToolVisitor};
use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ProtocolVersion, ToolAnnotations,
};

use crate::EngramServer;
use crate::error::ToolError;

/// Every tool engram has, as rmcp routes.
pub(crate) fn router() -> ToolRouter<EngramServer> {
    let mut routes = Routes(ToolRouter::new());
    engram_domain::each_tool(&mut routes);
    routes.0
}

/// Collects one route per tool.
struct Routes(ToolRouter<EngramServer>);

impl ToolVisitor for Routes {
    fn visit<T: Tool>(&mut self) {
        let input = schema_for_input::<T>()
            .unwrap_or_else(|error| panic!("the input schema of {}: {error}", T::NAME));
        let (read_only, destructive, idempotent) = match T::EFFECT {
            Effect::Reads => (Some(true), None, None),
            Effect::Writes {
                destructive,
                idempotent,
            } => (None, Some(destructive), Some(idempotent)),
        };
        let annotations = ToolAnnotations::from_raw(None, read_only, destructive, idempotent, None);
        let attr = rmcp::model::Tool::new_with_raw(T::NAME, Some(T::DESCRIPTION.into()), input)
            .with_raw_output_schema(schema_for_output::<T::Output>())
            .with_annotations(annotations);
        self.0.add_route(ToolRoute::new_dyn(attr, |context| {
            Box::pin(call::<T>(context))
        }));
    }
}

/// One call of the tool `T`.
async fn call<T: Tool>(
    context: ToolCallContext<'_, EngramServer>,
) -> Result<CallToolResponse, rmcp::ErrorData> {
    let server = context.service;
    let arguments = serde_json::Value::Object(context.arguments.unwrap_or_default());
    let schema = crate::input_schema(T::NAME);
    let request: T = match crate::arguments::parse(&arguments, schema.as_deref()) {
        Ok(request) => request,
        // A bad argument is the model's to fix: a tool error naming it.
        Err(message) => return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into()),
    };
    let request_context = &context.request_context;
    let called = async {
        let workspace = server.workspace(&request_context.extensions)?;
        Ok::<_, ToolError>(server.memory.call(workspace, request).await?)
    };
    let output = match called.await {
        Ok(output) => output,
        Err(error) => return error.into_call_tool_result(),
    };
    // A client of protocol 2025-06-18 or later gets a resource link (`engram://node/{name}`)
    // for each node a search found, to attach or open it in full.
    let links: Vec<ContentBlock> = match request_context.protocol_version() {
        Some(version) if version >= ProtocolVersion::V_2025_06_18 => (T::found_nodes(&output))
            .into_iter()
            .map(|name| ContentBlock::resource_link(crate::resources::node_link(name)))
            .collect(),
        _ => Vec::new(),
    };
    let structured = match serde_json::to_value(output) {
        Ok(structured) => structured,
        Err(error) => {
            let error = engram_domain::Error::Internal(format!("serialising the result: {error}"));
            return ToolError(error).into_call_tool_result();
        }
    };
    let mut result = CallToolResult::structured(structured);
    result.content.extend(links);
    Ok(result.into())
}
