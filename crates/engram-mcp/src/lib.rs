//! engram's MCP surface: [`EngramServer`], an rmcp server with one tool per tool of the
//! catalog (`shared/reference/tool-catalog.md`), over [`engram_domain::Memory`].
//!
//! Transports live in the binary; this crate knows no HTTP beyond reading the bound
//! workspace and the token's [`Access`] that the HTTP layer leaves in the request's
//! extensions ([`BoundWorkspace`]). A read-only session may call only the tools annotated
//! `readOnlyHint`; the others are refused as tool errors that say why.
//! Tool errors a model can fix come back as results with `isError: true`; outages as
//! JSON-RPC errors (see [`error`]).

pub mod error;
pub mod params;
pub mod results;
mod tools;

pub use engram_domain::auth::Access;
use engram_domain::{Memory, Workspace, WorkspaceId};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Extensions, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool_handler};

use crate::error::ToolError;

/// How a server instance finds the workspace its tools act on.
#[derive(Debug, Clone)]
pub enum Binding {
    /// One workspace for the whole connection (stdio, legacy SSE).
    Fixed(Workspace),
    /// Read from every request: the HTTP layer validates `X-Memory-Workspace` and stores a
    /// [`BoundWorkspace`] in the request's extensions (Streamable HTTP).
    PerRequest,
}

/// The workspace the HTTP layer resolved from `X-Memory-Workspace`, stored in the HTTP
/// request's extensions.
#[derive(Debug, Clone)]
pub struct BoundWorkspace(pub Workspace);

/// What the server tells a model about using it, sent in `initialize`.
pub const INSTRUCTIONS: &str = "\
engram is a persistent knowledge graph for this workspace. Nodes have a unique name, a type, \
an optional summary and tags, and ordered observations (atomic facts, one per observation). \
Relations are directed and typed (active voice: Alice -works_on-> engram).
- Before answering from memory, look things up: search_nodes finds nodes by meaning and keywords \
in your own words, search_observations finds single facts across all nodes \
(query_observations searches within one node), open_nodes reads known names in full, \
get_neighborhood walks from a node, get_nodes_by_type and get_recently_modified browse, \
read_graph pages through everything.
- Store durable facts as observations on the node they are about; create the node first with \
create_entities (existing names are left untouched). Prefer adding a fact over rewriting one; \
use replace_observation to correct a fact, keeping its ordinal.
- Link related nodes with create_relations; find_unlinked_references, find_similar_nodes and \
get_orphaned_nodes show links that are missing.
- Keep summaries current: get_pending_consolidation lists nodes whose summary is missing or \
older than their newest observation; write one with set_summary.
Errors name the argument and the limit; fix the call and retry.";

/// The MCP server: the catalog's tools over a [`Memory`], bound to a workspace by
/// [`Binding`]. Cheap to clone; one instance per MCP session.
#[derive(Clone)]
pub struct EngramServer {
    memory: Memory,
    binding: Binding,
    access: Access,
    tool_router: ToolRouter<Self>,
}

impl EngramServer {
    /// A server over `memory`, finding its workspace by `binding`.
    pub fn new(memory: Memory, binding: Binding) -> Self {
        Self {
            memory,
            binding,
            access: Access::ReadWrite,
            tool_router: Self::tool_router(),
        }
    }

    /// Limits a [`Binding::Fixed`] connection (legacy SSE) to `access`. Per-request
    /// bindings read the [`Access`] the HTTP layer stores in each request's extensions.
    #[must_use]
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// What this request may do: the connection's access, narrowed by the request's.
    fn access(&self, extensions: &Extensions) -> Access {
        let per_request = extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Access>())
            .copied();
        match (self.access, per_request) {
            (Access::ReadOnly, _) | (_, Some(Access::ReadOnly)) => Access::ReadOnly,
            _ => Access::ReadWrite,
        }
    }

    /// The workspace this request works in: the connection's, or the one the HTTP layer
    /// bound the request to.
    fn bound<'a>(&'a self, extensions: &'a Extensions) -> Option<&'a Workspace> {
        match &self.binding {
            Binding::Fixed(workspace) => Some(workspace),
            Binding::PerRequest => extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<BoundWorkspace>())
                .map(|bound| &bound.0),
        }
    }

    /// The call itself; a read-only session is refused a tool that writes.
    async fn authorised_call(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        if self.access(&context.extensions) == Access::ReadOnly
            && self.tool_router.has_route(&request.name)
            && !self.is_read_only(&request.name)
        {
            let refusal = format!(
                "{} changes the memory and this token is read-only: only the tools that change \
                 nothing may be called (a read-write token comes from `engram token create`)",
                request.name
            );
            return Ok(
                rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(refusal)])
                    .into(),
            );
        }
        let context = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(context).await
    }

    /// Whether `tool` is annotated as changing nothing.
    fn is_read_only(&self, tool: &str) -> bool {
        (self.tool_router.get(tool))
            .and_then(|t| t.annotations.as_ref())
            .and_then(|a| a.read_only_hint)
            == Some(true)
    }

    /// Every tool this server offers, as `tools/list` returns them.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }

    fn workspace(&self, extensions: &Extensions) -> Result<WorkspaceId, ToolError> {
        self.bound(extensions).map(|w| w.id).ok_or_else(|| {
            ToolError(engram_domain::Error::Internal(
                "no workspace is bound to this request (X-Memory-Workspace)".into(),
            ))
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EngramServer {
    /// Every tool call: one span (tool, workspace) with a closing event giving its outcome
    /// and duration, and the metrics `engram_tool_calls_total{tool, workspace, outcome}` and
    /// `engram_tool_call_duration_seconds{tool}`. Arguments and results (observation texts)
    /// are never logged.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        use tracing::Instrument;
        let tool = request.name.to_string();
        let workspace =
            (self.bound(&context.extensions)).map_or_else(String::new, |w| w.name.clone());
        let span = tracing::info_span!("tool_call", tool = %tool, workspace = %workspace);
        let started = std::time::Instant::now();
        let response = self
            .authorised_call(request, context)
            .instrument(span.clone())
            .await;
        let outcome = match &response {
            Ok(rmcp::model::CallToolResponse::Complete(result))
                if result.is_error == Some(true) =>
            {
                "tool_error"
            }
            Ok(_) => "ok",
            Err(_) => "error",
        };
        let seconds = started.elapsed().as_secs_f64();
        span.in_scope(|| {
            tracing::info!(outcome, duration_ms = seconds * 1e3, "tool call");
        });
        metrics::counter!("engram_tool_calls_total", "tool" => tool.clone(), "workspace" => workspace, "outcome" => outcome)
            .increment(1);
        metrics::histogram!("engram_tool_call_duration_seconds", "tool" => tool).record(seconds);
        response
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("engram", env!("CARGO_PKG_VERSION"))
                    .with_title("engram knowledge-graph memory"),
            )
            .with_instructions(INSTRUCTIONS)
    }
}
