//! engram's MCP surface: [`EngramServer`], an rmcp server with one tool per tool of the
//! catalog (`shared/reference/tool-catalog.md`), over [`engram_domain::Memory`].
//!
//! Transports live in the binary; this crate knows no HTTP beyond reading the bound
//! workspace and the token's [`Access`] that the HTTP layer leaves in the request's
//! extensions ([`BoundWorkspace`]). A read-only session is offered, and may call, only the
//! tools annotated `readOnlyHint`; a call to another is refused as a tool error that says why.
//! The operator may offer a subset of the tools ([`ToolSet`]). Every schema is made portable
//! ([`schema`]), and an argument of the wrong type is answered naming it.
//! Tool errors a model can fix come back as results with `isError: true`; outages as
//! JSON-RPC errors (see [`error`]).

mod arguments;
pub mod backlog;
pub mod error;
pub mod markdown;
#[cfg(any(test, feature = "testing"))]
pub mod portability;
pub mod prompts;
pub mod resources;
pub mod schema;
mod tools;
mod toolset;

pub use backlog::AnswerBacklog;
pub use engram_domain::auth::Access;
use engram_domain::{Memory, Workspace, WorkspaceId};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Extensions, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool_handler};
pub use toolset::{CORE, GRAPH, REFLECTIONS, ToolSet, UnknownTool};

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

/// Who the request's writes are by (a token's label, an OAuth subject), stored in the HTTP
/// request's extensions by the authentication layer; a call without one writes as
/// [`LOCAL_AUTHOR`] (stdio, or HTTP without tokens).
#[derive(Debug, Clone)]
pub struct Author(pub std::sync::Arc<str>);

/// The author of calls no token names.
pub const LOCAL_AUTHOR: &str = "local";

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
use replace_observation to correct a fact, keeping its ordinal. Never store a credential (key, \
token, password): it is refused or redacted; store where it is kept instead.
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
    /// A [`Binding::Fixed`] connection's author (legacy SSE: its token's).
    author: Option<Author>,
    tool_router: ToolRouter<Self>,
    /// The session's calls running at once (at most [`CALLS_PER_SESSION`]); the others wait.
    running: std::sync::Arc<tokio::sync::Semaphore>,
    /// Answers built and not yet taken by the transport, when the transport reports them.
    backlog: Option<AnswerBacklog>,
    /// Counts every call while it runs, for a server that waits for them before it stops.
    calls: Option<tokio_util::task::TaskTracker>,
}

/// Tool calls of one session that run at once. A client may send many requests without
/// waiting; each answer is built in memory (a large one is several times its JSON size), so
/// the rest wait their turn instead of all being built together.
pub const CALLS_PER_SESSION: usize = 4;

/// Every tool with portable schemas, built once per process.
static TOOLS: std::sync::LazyLock<ToolRouter<EngramServer>> = std::sync::LazyLock::new(|| {
    let mut router = tools::router();
    for route in router.map.values_mut() {
        let tool = &mut route.attr;
        tool.input_schema = std::sync::Arc::new(schema::model_facing(&tool.input_schema));
        if let Some(output) = &tool.output_schema {
            tool.output_schema = Some(std::sync::Arc::new(schema::output(output)));
        }
    }
    router
});

/// The input schema `tools/list` publishes for the tool `name` (what a bad argument is
/// described by), if engram has that tool.
fn input_schema(name: &str) -> Option<std::sync::Arc<serde_json::Map<String, serde_json::Value>>> {
    TOOLS.get(name).map(|tool| tool.input_schema.clone())
}

impl EngramServer {
    /// A server over `memory` offering every tool, finding its workspace by `binding`.
    pub fn new(memory: Memory, binding: Binding) -> Self {
        Self {
            memory,
            binding,
            access: Access::ReadWrite,
            author: None,
            tool_router: TOOLS.clone(),
            running: std::sync::Arc::new(tokio::sync::Semaphore::new(CALLS_PER_SESSION)),
            backlog: None,
            calls: None,
        }
    }

    /// Counts each tool call in `calls` from when it arrives until its answer is built, so
    /// that a stopping server can wait for the calls in flight (`TaskTracker::wait`) before
    /// it ends sessions and streams.
    #[must_use]
    pub fn with_call_tracker(mut self, calls: tokio_util::task::TaskTracker) -> Self {
        self.calls = Some(calls);
        self
    }

    /// Starts a call only while fewer than [`backlog::ANSWERS_WAITING`] of the session's
    /// answers wait for its transport, which reports each answer it takes to `backlog`
    /// ([`AnswerBacklog::taken`]). For transports that write answers out more slowly than
    /// tools build them (legacy SSE).
    #[must_use]
    pub fn with_backlog(mut self, backlog: AnswerBacklog) -> Self {
        self.backlog = Some(backlog);
        self
    }

    /// Offers only the tools in `tools`; the others are neither listed nor callable.
    #[must_use]
    pub fn with_tools(mut self, tools: &ToolSet) -> Self {
        let left_out: Vec<String> = (self.tool_router.map.values())
            .filter(|route| !tools.offers(&route.attr.name, is_read_only(&route.attr)))
            .map(|route| route.attr.name.to_string())
            .collect();
        for name in left_out {
            self.tool_router.remove_route(&name);
        }
        self
    }

    /// The names of every tool engram has, sorted.
    pub fn tool_names() -> Vec<String> {
        let mut names: Vec<String> = TOOLS.map.keys().map(|name| name.to_string()).collect();
        names.sort();
        names
    }

    /// Limits a [`Binding::Fixed`] connection (legacy SSE) to `access`. Per-request
    /// bindings read the [`Access`] the HTTP layer stores in each request's extensions.
    #[must_use]
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Names the author of a [`Binding::Fixed`] connection's writes (legacy SSE: the token
    /// that opened it). Per-request bindings read the [`Author`] in each request's extensions.
    #[must_use]
    pub fn with_author(mut self, author: Option<Author>) -> Self {
        self.author = author;
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
        let author = (context.extensions.get::<http::request::Parts>())
            .and_then(|parts| parts.extensions.get::<Author>())
            .or(self.author.as_ref())
            .map_or_else(
                || std::sync::Arc::from(LOCAL_AUTHOR),
                |author| author.0.clone(),
            );
        let context = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        engram_domain::authorship::scope(&author, self.tool_router.call(context)).await
    }

    /// Whether `tool` is annotated as changing nothing.
    fn is_read_only(&self, tool: &str) -> bool {
        self.tool_router.get(tool).is_some_and(is_read_only)
    }

    /// The workspace of a prompt or resource request (or the JSON-RPC error saying none is
    /// bound), once the request has its turn among the session's calls (a prompt runs a
    /// search or the report): the permit is held until it is dropped.
    async fn request_turn(
        &self,
        extensions: &Extensions,
    ) -> Result<(WorkspaceId, Option<tokio::sync::SemaphorePermit<'_>>), rmcp::ErrorData> {
        let workspace =
            (self.workspace(extensions)).map_err(|error| error::protocol_error(error.0))?;
        Ok((workspace, self.running.acquire().await.ok()))
    }

    fn workspace(&self, extensions: &Extensions) -> Result<WorkspaceId, ToolError> {
        self.bound(extensions).map(|w| w.id).ok_or_else(|| {
            ToolError(engram_domain::Error::Internal(
                "no workspace is bound to this request (X-Memory-Workspace)".into(),
            ))
        })
    }
}

/// Whether `tool` is annotated as changing nothing.
fn is_read_only(tool: &rmcp::model::Tool) -> bool {
    tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EngramServer {
    /// The tools offered, and to a read-only session only those that change nothing.
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let mut tools = self.tool_router.list_all();
        if self.access(&context.extensions) == Access::ReadOnly {
            tools.retain(is_read_only);
        }
        let mut result = rmcp::model::ListToolsResult::with_all_items(tools);
        // The list depends on the session's token: fresh for this client only.
        if (context.protocol_version())
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28)
        {
            result.ttl_ms = Some(0);
            result.cache_scope = Some(rmcp::model::CacheScope::Private);
        }
        Ok(result)
    }

    /// Every tool call: one span (tool, workspace) with a closing event giving its outcome
    /// and duration, and the metrics `engram_tool_calls_total{tool, workspace, outcome}` and
    /// `engram_tool_call_duration_seconds{tool}` (`tool` is `other` for a name engram does not
    /// have). Arguments and results (observation texts) are never logged.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        use tracing::Instrument;
        let _counted = self
            .calls
            .as_ref()
            .map(tokio_util::task::TaskTracker::token);
        // A name a client makes up is `other` in metrics and logs: label values come from a
        // closed set (the tools engram has), however many names clients invent.
        let tool = if TOOLS.has_route(&request.name) {
            request.name.to_string()
        } else {
            "other".to_owned()
        };
        let workspace =
            (self.bound(&context.extensions)).map_or_else(String::new, |w| w.name.clone());
        let span = tracing::info_span!("tool_call", tool = %tool, workspace = %workspace);
        let started = std::time::Instant::now();
        let _turn = self.running.acquire().await.ok();
        let backlog_turn = match &self.backlog {
            Some(backlog) => tokio::select! {
                turn = backlog.turn() => Some(turn),
                () = context.ct.cancelled() => None,
            },
            None => None,
        };
        if context.ct.is_cancelled() {
            // Cancelled while it waited its turn (the client cancelled it, or its session
            // closed): nobody will read an answer, so none is built.
            return Err(rmcp::ErrorData::internal_error(
                "the request was cancelled before it started",
                None,
            ));
        }
        let (id, cancelled) = (context.id.clone(), context.ct.clone());
        let response = self
            .authorised_call(request, context)
            .instrument(span.clone())
            .await;
        // A cancelled request's answer is dropped by rmcp, never handed to the transport.
        if let (Some(turn), Ok(_), false) = (backlog_turn, &response, cancelled.is_cancelled()) {
            turn.built(id);
        }

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
            // Microseconds are all a duration needs: `duration_ms=13.629`, not 13.628962999.
            let duration_ms = (seconds * 1e6).round() / 1e3;
            tracing::info!(outcome, duration_ms, "tool call");
        });
        metrics::counter!("engram_tool_calls_total", "tool" => tool.clone(), "workspace" => workspace, "outcome" => outcome)
            .increment(1);
        metrics::histogram!("engram_tool_call_duration_seconds", "tool" => tool).record(seconds);
        response
    }

    async fn list_prompts(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListPromptsResult::with_all_items(
            prompts::list(),
        ))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, rmcp::ErrorData> {
        let (workspace, _turn) = self.request_turn(&context.extensions).await?;
        let prompt = self
            .render_prompt(workspace, &request.name, request.arguments.as_ref())
            .await?;
        Ok(prompt.into())
    }

    async fn list_resources(
        &self,
        request: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
        let (workspace, _turn) = self.request_turn(&context.extensions).await?;
        let cursor = request.and_then(|r| r.cursor);
        self.list_resource_page(workspace, cursor).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    /// A request rmcp could not read as any method it knows. One of MCP's own methods whose
    /// parameters are missing or malformed (`resources/read` without a string `uri`) is an
    /// invalid-params error (-32602) naming what it needs; only an unknown method is -32601.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CustomResult, rmcp::ErrorData> {
        let needs = match request.method.as_str() {
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                "`uri`, a string such as engram://node/{name}"
            }
            "prompts/get" => "`name`, a string, and `arguments`, an object of strings",
            "tools/call" => "`name`, a string, and `arguments`, an object",
            "completion/complete" => "`ref` and `argument`",
            "logging/setLevel" => "`level`, a log level",
            _ => {
                return Err(rmcp::ErrorData::new(
                    rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                    request.method,
                    None,
                ));
            }
        };
        Err(rmcp::ErrorData::invalid_params(
            format!("invalid params for {}: it needs {needs}", request.method),
            None,
        ))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        let (workspace, _turn) = self.request_turn(&context.extensions).await?;
        Ok(self
            .read_resource_uri(workspace, &request.uri)
            .await?
            .into())
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("engram", env!("CARGO_PKG_VERSION"))
                    .with_title("engram knowledge-graph memory"),
            )
            .with_instructions(INSTRUCTIONS)
    }
}
