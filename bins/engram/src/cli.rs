//! Command-line interface: flags with environment fallbacks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use engram_domain::{GenerationBudget, TextGenerator};
use engram_embed::LocalModel;

/// engram: a knowledge-graph memory server for AI agents, over MCP.
#[derive(Debug, Parser)]
#[command(name = "engram", version, about)]
pub struct Cli {
    /// Where the data lives: `postgres://user:password@host:port/database` for PostgreSQL,
    /// or a file path (`sqlite://PATH` also works) for SQLite. Default: SQLite at
    /// ~/.local/share/engram/engram.db (the platform's data directory), created on first use.
    #[arg(
        long,
        env = "ENGRAM_DATABASE_URL",
        global = true,
        hide_env_values = true
    )]
    pub database_url: Option<String>,

    /// A direct connection to PostgreSQL, for when `--database-url` leads to a transaction
    /// pooler (PgBouncer with `pool_mode = transaction`): migrations, HNSW index builds and
    /// statistics use it, and every call's transaction then sets its own time limit and keeps
    /// no prepared statement past its commit.
    #[arg(
        long,
        env = "ENGRAM_DATABASE_DIRECT_URL",
        global = true,
        hide_env_values = true
    )]
    pub database_direct_url: Option<String>,

    /// A streaming replica of the PostgreSQL database (`postgres://…`, through the same kind of
    /// pooler as `--database-url`, if any). A read-only call or search runs there when the
    /// replica has replayed every write acknowledged before it began, and on the primary
    /// otherwise; a replica that fails, or stays behind past `--read-replica-max-lag`, is left
    /// alone for 5 s (a warning, and `engram_replica_reads_total` on /metrics).
    #[arg(
        long,
        env = "ENGRAM_READ_REPLICA_URL",
        global = true,
        hide_env_values = true
    )]
    pub read_replica_url: Option<String>,

    /// How long the read replica may stay behind the primary before it is left alone, e.g.
    /// `5s`.
    #[arg(long, env = "ENGRAM_READ_REPLICA_MAX_LAG", global = true, default_value = "5s", value_parser = humantime::parse_duration)]
    pub read_replica_max_lag: Duration,

    /// How logs (on stderr) look: `pretty` lines for people, or `json`, one object a line,
    /// for log collectors. Which logs: `ENGRAM_LOG` (or `RUST_LOG`), e.g. `info,engram=debug`.
    #[arg(long, env = "ENGRAM_LOG_FORMAT", global = true, value_enum, default_value_t = LogFormat::Pretty)]
    pub log_format: LogFormat,

    /// What a write does with a text that holds a credential (a cloud key, a forge or chat
    /// token, a private key, a JWT, a URL with a password, a high-entropy value after
    /// `key=`, `token=`, `password=`): `refuse` the call, naming the field and the kind of
    /// secret; `redact` it (store `[redacted: KIND]` instead); or `allow` it. Applies to
    /// every tool and to `engram import`.
    #[arg(long, env = "ENGRAM_SECRETS", global = true, default_value = "refuse", value_parser = parse_secret_policy)]
    pub secrets: engram_domain::SecretPolicy,

    #[command(subcommand)]
    pub command: Command,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal unless `NO_COLOR` is set).
    Pretty,
    /// One JSON object a line: time, level, target, fields, and the tool call's span.
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the MCP tools: Streamable HTTP at /mcp and legacy SSE at /sse, or stdio.
    Serve(Box<ServeArgs>),
    /// Copy the SQLite database into a new file while servers keep writing to it: SQLite's
    /// online backup API copies one consistent moment and holds no writer up. PostgreSQL is
    /// backed up with pg_dump (README, "Backups").
    Backup {
        /// The new file (never overwritten).
        path: std::path::PathBuf,
    },
    /// Restore a file `engram backup` wrote into an empty SQLite store (a missing file is
    /// made), then bring its schema up to date.
    Restore {
        /// The backup file.
        path: std::path::PathBuf,
    },
    /// Apply the database migrations this build carries that the database lacks.
    Migrate,
    /// Download a local embedding model into its cache now, for machines that will run
    /// offline; prints where it is.
    FetchModel {
        /// The model (`engram serve --model`); `all` fetches every one.
        #[arg(long, env = "ENGRAM_MODEL", default_value = "all-minilm-l6-v2")]
        model: String,
    },
    /// Re-embed every observation of a workspace from scratch (after changing models or
    /// perspectives), with a progress bar.
    Reindex {
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    /// Create, list and revoke access tokens for the HTTP transports.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Create, list, rename and delete workspaces.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Print a shell completion script: `engram completions bash > ~/.local/share/bash-completion/completions/engram`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `engram man > ~/.local/share/man/man1/engram.1`; with
    /// `--dir`, write it and one page per subcommand (`engram-serve.1`, …) there instead.
    Man {
        /// Write every page into this directory (e.g. `~/.local/share/man/man1`).
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Import a graph from a JSONL file: the reference memory server's `memory.jsonl` (or its
    /// older `memory.json`), or engram's own export. Streams the file in batches (each one
    /// transaction); running it twice adds nothing. Prints what was imported, already present
    /// and rejected (with line numbers); exits 1 when any line was rejected.
    Import(ImportArgs),
    /// Write a workspace out: `jsonl` (engram's lossless format, for `engram import`),
    /// `anthropic` (the reference memory server's file), or a drawing (`mermaid`, `dot`).
    Export(ExportArgs),
    /// Print a workspace's consolidation report as JSON (what the get_consolidation_report
    /// tool returns), e.g. from a scheduled job. Uses the vectors the server's indexer made.
    Report(ReportArgs),
    /// Print what memory holds on a query as compact markdown (a hybrid search), or nothing
    /// when nothing relevant is stored: for people, scripts and prompt hooks (`--hook`).
    Recall(RecallArgs),
    /// Print a short digest of a workspace: its counts, most connected and most recently
    /// changed nodes with their summaries, within `--max-chars`; for session-start hooks.
    Brief(BriefArgs),
    /// Set up a client to recall memory on its own: `engram hooks claude-code --workspace W`
    /// prints the hooks (or `--install`s them) that add the brief at session start and what
    /// memory holds on each prompt.
    #[command(subcommand)]
    Hooks(HooksCommand),
}

/// Where `recall` and `brief` read memory: a running server (`--url`), else the database
/// (`--database-url`, as every command).
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// A running engram server (`http://127.0.0.1:8765`), asked over MCP instead of opening
    /// the database: faster (its model is loaded) and the only way when it is on another
    /// machine.
    #[arg(long, env = "ENGRAM_URL")]
    pub url: Option<String>,
    /// The server's access token (`engram token create`), when it requires one; better given
    /// in the environment.
    #[arg(long, env = "ENGRAM_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// How `recall` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RecallFormat {
    /// One line a node: name, type, score, the matching fact and the summary.
    Markdown,
    /// `search_nodes`' result as JSON.
    Json,
}

/// Arguments of `engram recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// What to recall. With `--hook`, read from the hook's JSON input instead.
    #[arg(required_unless_present = "hook")]
    pub query: Option<String>,
    /// The workspace.
    #[arg(long, env = "ENGRAM_WORKSPACE")]
    pub workspace: String,
    /// Nodes at most, 1–1000.
    #[arg(long, default_value_t = 5)]
    pub limit: u32,
    /// Least score (0–1, the chance a node is relevant) of a node printed; default the
    /// model's own threshold, below which nothing relevant is said to be stored.
    #[arg(long)]
    pub min_score: Option<f64>,
    /// The output.
    #[arg(long, value_enum, default_value_t = RecallFormat::Markdown)]
    pub format: RecallFormat,
    #[command(flatten)]
    pub run: HookRunArgs,
    #[command(flatten)]
    pub embed: EmbedArgs,
}

/// How `recall` and `brief` run: where they read, within what time, as a hook or not.
#[derive(Debug, Clone, Args)]
pub struct HookRunArgs {
    /// Run as a Claude Code hook (`UserPromptSubmit` for recall: the query is the `prompt`
    /// of the JSON on standard input; `SessionStart` for brief): a failure or the time limit
    /// prints nothing and exits 0, so a slow store never holds up the user.
    #[arg(long)]
    pub hook: bool,
    /// The time limit, e.g. `3s`.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Arguments of `engram brief`.
#[derive(Debug, Args)]
pub struct BriefArgs {
    /// The workspace.
    #[arg(long, env = "ENGRAM_WORKSPACE")]
    pub workspace: String,
    /// The longest brief printed, in characters.
    #[arg(long, default_value_t = engram_mcp::markdown::BRIEF_CHARS)]
    pub max_chars: usize,
    #[command(flatten)]
    pub run: HookRunArgs,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Claude Code's hooks: `SessionStart` runs `engram brief --hook`, `UserPromptSubmit`
    /// runs `engram recall --hook`, each within a time limit. Prints the settings JSON, or
    /// merges it into a settings file with `--install` (a backup beside it) and takes it out
    /// with `--uninstall`.
    ClaudeCode(HooksArgs),
}

/// Arguments of `engram hooks claude-code`.
#[derive(Debug, Args)]
pub struct HooksArgs {
    /// The workspace the hooks read (not needed with `--uninstall`).
    #[arg(long, env = "ENGRAM_WORKSPACE", required_unless_present = "uninstall")]
    pub workspace: Option<String>,
    /// Merge the hooks into the settings file (replacing engram's earlier ones).
    #[arg(long, conflicts_with = "uninstall")]
    pub install: bool,
    /// Take engram's hooks out of the settings file, leaving every other setting.
    #[arg(long)]
    pub uninstall: bool,
    /// The settings file: the project's own, uncommitted `.claude/settings.local.json` by
    /// default (the hooks name this machine's engram and database); `~/.claude/settings.json`
    /// for every project.
    #[arg(long, default_value = ".claude/settings.local.json")]
    pub settings: std::path::PathBuf,
    /// Seconds each hook may take before Claude Code stops waiting (engram itself gives up a
    /// second earlier and prints nothing).
    #[arg(long, default_value_t = 5)]
    pub timeout: u64,
    /// Nodes recalled for each prompt.
    #[arg(long, default_value_t = 5)]
    pub limit: u32,
    /// A running server the hooks ask (recommended: its model is loaded, so a recall takes
    /// milliseconds); without it they open the database. A token comes from `ENGRAM_TOKEN`
    /// in Claude Code's environment, never from the settings file.
    #[arg(long, env = "ENGRAM_URL")]
    pub url: Option<String>,
}

/// Arguments of `engram import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The JSONL file; `-` reads standard input.
    pub file: std::path::PathBuf,
    /// The workspace to import into.
    #[arg(long, env = "ENGRAM_WORKSPACE")]
    pub workspace: String,
    /// Create the workspace if it does not exist.
    #[arg(long)]
    pub create_workspace: bool,
    /// Read and check every line, and say what would be imported, without writing anything:
    /// not the workspace, not even the database file (a workspace or database that does not
    /// exist yet is checked as empty).
    #[arg(long)]
    pub dry_run: bool,
    /// Keep relations whose endpoint neither the file nor the workspace holds, as the
    /// reference memory server does: a node of type `unknown` is made for each such endpoint
    /// (listed after the table). Without it those relations are refused and listed.
    #[arg(long)]
    pub create_missing_nodes: bool,
}

/// What `engram export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// engram's lossless JSONL: nodes with ordinals, summaries, tags and timestamps, then
    /// relations; `engram import` reads it back exactly.
    Jsonl,
    /// The reference memory server's JSONL (entities with their observation texts, relations).
    Anthropic,
    /// A Mermaid flowchart.
    Mermaid,
    /// A Graphviz digraph.
    Dot,
}

/// Arguments of `engram export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The workspace to export.
    #[arg(long, env = "ENGRAM_WORKSPACE")]
    pub workspace: String,
    /// The format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Draw only this node's neighbourhood (mermaid and dot).
    #[arg(long, value_name = "NAME")]
    pub around: Option<String>,
    /// Hops around `--around`, 0–6.
    #[arg(long, default_value_t = 1, requires = "around")]
    pub depth: u32,
    /// Write here instead of standard output.
    #[arg(long, short)]
    pub output: Option<std::path::PathBuf>,
}

/// A workspace named either way, as every subcommand that takes one accepts it:
/// `engram report demo` or `engram report --workspace demo`.
#[derive(Debug, Args)]
pub struct WorkspaceArg {
    /// The workspace (or `--workspace NAME`).
    #[arg(
        value_name = "WORKSPACE",
        required_unless_present = "workspace",
        conflicts_with = "workspace"
    )]
    positional: Option<String>,
    /// The workspace.
    #[arg(long = "workspace", value_name = "NAME")]
    workspace: Option<String>,
}

impl WorkspaceArg {
    /// The name given.
    pub fn name(&self) -> &str {
        (self.positional.as_deref())
            .or(self.workspace.as_deref())
            .unwrap_or_default()
    }
}

/// Arguments of `engram report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Start of the event counts' window (RFC 3339, e.g. 2026-11-01T00:00:00Z); default 7
    /// days ago.
    #[arg(long)]
    pub since: Option<engram_domain::Timestamp>,
    /// Entries per list, 1–1,000.
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    /// Least cosine similarity of a relation candidate.
    #[arg(long, default_value_t = 0.75)]
    pub min_score: f64,
    /// Least cosine similarity of neighbours in one cluster.
    #[arg(long, default_value_t = 0.6)]
    pub cluster_min_score: f64,
    /// Days without a write after which a node read at most twice since is stale.
    #[arg(long, default_value_t = 90)]
    pub stale_days: u32,
    #[command(flatten)]
    pub embed: EmbedArgs,
    #[command(flatten)]
    pub generate: GenerateArgs,
}

/// The embedding model.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Embedding model: `local` (a sentence model in-process, `--model`, fetched on first
    /// use), `ollama` (an Ollama server), or `none` (full-text search only). Default: `ollama`
    /// when OLLAMA_HOST is set, else `local`.
    #[arg(long, env = "ENGRAM_EMBEDDER", value_parser = ["local", "ollama", "none"])]
    pub embedder: Option<String>,
    /// The local embedder's model: `all-minilm-l6-v2` (the default: English, the best hybrid
    /// recall on our benchmarks) or `multilingual-e5-small` (about 100 languages, better by
    /// meaning alone, about half as fast). Switching re-embeds every workspace in the
    /// background; searches answer from full text meanwhile.
    #[arg(long, env = "ENGRAM_MODEL", default_value_t = LocalModel::default(), value_parser = parse_model)]
    pub model: LocalModel,
    /// The Ollama server.
    #[arg(long, env = "OLLAMA_HOST", default_value = "http://127.0.0.1:11434")]
    pub ollama_host: String,
    /// The Ollama embedding model.
    #[arg(long, env = "ENGRAM_EMBED_MODEL", default_value = "nomic-embed-text")]
    pub embed_model: String,
}

impl EmbedArgs {
    /// The embedder these arguments select.
    pub fn choice(&self) -> engram::indexing::EmbedderChoice {
        use engram::indexing::EmbedderChoice;
        let ollama_configured = std::env::var_os("OLLAMA_HOST").is_some();
        match self.embedder.as_deref() {
            Some("none") => EmbedderChoice::None,
            Some("ollama") => self.ollama(),
            None if ollama_configured => self.ollama(),
            _ => EmbedderChoice::Local(self.model),
        }
    }

    fn ollama(&self) -> engram::indexing::EmbedderChoice {
        engram::indexing::EmbedderChoice::Ollama {
            host: self.ollama_host.clone(),
            model: self.embed_model.clone(),
        }
    }
}

/// The text model behind the consolidation report's drafts.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Ollama text model for the consolidation report's draft summaries, rationales and
    /// cluster labels, e.g. `llama3.2` (served at OLLAMA_HOST). Unset: extractive texts only.
    #[arg(long, env = "ENGRAM_GENERATE_MODEL")]
    pub generate_model: Option<String>,
    /// Seconds one consolidation report may spend generating; what is not done by then stays
    /// extractive.
    #[arg(long, env = "ENGRAM_GENERATE_BUDGET", default_value_t = 20.0)]
    pub generate_budget: f64,
    /// Generations in flight at once.
    #[arg(long, env = "ENGRAM_GENERATE_CONCURRENCY", default_value_t = 4)]
    pub generate_concurrency: usize,
}

impl GenerateArgs {
    /// The generator and its budget, when a model is set.
    pub fn build(
        &self,
        ollama_host: &str,
    ) -> anyhow::Result<Option<(Arc<dyn TextGenerator>, GenerationBudget)>> {
        let Some(model) = &self.generate_model else {
            return Ok(None);
        };
        anyhow::ensure!(
            self.generate_budget.is_finite() && self.generate_budget > 0.0,
            "--generate-budget must be a positive number of seconds, got {}",
            self.generate_budget
        );
        let generator = engram_embed::OllamaGenerator::new(ollama_host, model)?;
        let budget = GenerationBudget {
            total: Duration::from_secs_f64(self.generate_budget),
            concurrency: self.generate_concurrency.max(1),
        };
        Ok(Some((Arc::new(generator), budget)))
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub embed: EmbedArgs,
    #[command(flatten)]
    pub generate: GenerateArgs,
    /// Address to listen on. Non-loopback clients also need --allowed-host.
    #[arg(long, env = "ENGRAM_BIND", default_value = "127.0.0.1:8765")]
    pub bind: SocketAddr,
    /// Do not apply pending migrations at start (the schema must then be current). PostgreSQL
    /// only: a SQLite file is always brought up to date when opened.
    #[arg(long)]
    pub no_migrate: bool,
    /// Extra Host names to serve (`name` for any port, or `name:port`), for a server reached
    /// by name or behind a reverse proxy. Loopback names are always served. Repeatable.
    #[arg(
        long = "allowed-host",
        env = "ENGRAM_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to serve (`https://app.example`, `http://tool.example:*` for any
    /// port). Loopback origins are always served; others are refused. Repeatable.
    #[arg(
        long = "allowed-origin",
        env = "ENGRAM_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// Create this workspace at start if it does not exist yet (for one-line setups).
    #[arg(long, value_name = "NAME")]
    pub create_workspace: Option<String>,
    /// Require `Authorization: Bearer <token>` on every HTTP request (tokens come from
    /// `engram token create`). On by default whenever --bind is not a loopback address.
    #[arg(long, conflicts_with = "insecure_no_auth")]
    pub require_auth: bool,
    /// Serve a non-loopback address without tokens: anyone who reaches the port reads and
    /// writes every workspace. Only behind a proxy that authenticates.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// The largest request body accepted, in bytes; larger ones get 413. The default holds a
    /// full batch of 1,000 observations of 64 KiB. All requests together hold one such body
    /// and 16 MiB more at once; the others wait in line.
    #[arg(long, env = "ENGRAM_MAX_BODY_BYTES", default_value_t = engram::http::MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// How long a client may take to send a request body, e.g. `30s`; a slower one gets 408.
    #[arg(long, env = "ENGRAM_BODY_READ_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub body_read_timeout: Duration,
    /// Bytes of answers that may wait for one session's client to read them; past it (or past
    /// --max-unread-bytes for all sessions) a legacy SSE session is closed and a Streamable
    /// HTTP answer is cut off (its connection closed).
    #[arg(
        long,
        env = "ENGRAM_MAX_UNREAD_BYTES_PER_SESSION",
        default_value_t = engram::http::MAX_UNREAD_BYTES_PER_SESSION
    )]
    pub max_unread_bytes_per_session: usize,
    /// Bytes of answers that may wait for all clients together to read them (legacy SSE and
    /// Streamable HTTP).
    #[arg(long, env = "ENGRAM_MAX_UNREAD_BYTES", default_value_t = engram::http::MAX_UNREAD_BYTES)]
    pub max_unread_bytes: usize,
    /// Connections open at once from one client address; over it, a new connection is closed
    /// at once. A trusted proxy's own connections are not counted.
    #[arg(
        long,
        env = "ENGRAM_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = engram::http::MAX_CONNECTIONS_PER_ADDRESS
    )]
    pub max_connections_per_address: usize,
    /// A reverse proxy whose `Forwarded` or `X-Forwarded-For` header names the client (for the
    /// limits per address); from any other peer those headers are ignored. Repeatable.
    #[arg(
        long = "trusted-proxy",
        env = "ENGRAM_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "ADDRESS"
    )]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// MCP sessions open at once, Streamable HTTP and SSE together; a new one over it gets
    /// 503 with `Retry-After`.
    #[arg(long, env = "ENGRAM_MAX_SESSIONS", default_value_t = engram::http::MAX_SESSIONS)]
    pub max_sessions: usize,
    /// MCP sessions open at once from one client address; a new one over it gets 429.
    #[arg(
        long,
        env = "ENGRAM_MAX_SESSIONS_PER_ADDRESS",
        default_value_t = engram::http::MAX_SESSIONS_PER_ADDRESS
    )]
    pub max_sessions_per_address: usize,
    /// A Streamable HTTP session unused this long is closed (its client opens a new one),
    /// e.g. `30m`, `2h`.
    #[arg(long, env = "ENGRAM_SESSION_IDLE", default_value = "30m", value_parser = humantime::parse_duration)]
    pub session_idle: Duration,
    /// Accept OAuth 2.1 access tokens (JWTs) from this authorization server beside engram's
    /// own tokens (which are then required): its issuer identifier, the tokens' `iss`. Needs
    /// --oauth-jwks-url and --resource-url. Scopes grant workspaces: `engram:NAME` to read
    /// and write NAME, `engram:NAME:read` to read it.
    #[arg(long, env = "ENGRAM_OAUTH_ISSUER", requires_all = ["oauth_jwks_url", "resource_url"])]
    pub oauth_issuer: Option<String>,
    /// The authorization server's JSON Web Key Set (fetched, cached for 10 minutes, fetched
    /// again for an unknown key id).
    #[arg(long, env = "ENGRAM_OAUTH_JWKS_URL", requires = "oauth_issuer")]
    pub oauth_jwks_url: Option<String>,
    /// This server's resource identifier as clients reach it, e.g.
    /// `https://memory.example.com/mcp`: tokens must carry it as their audience (RFC 8707),
    /// and /.well-known/oauth-protected-resource names it.
    #[arg(long, env = "ENGRAM_RESOURCE_URL", requires = "oauth_issuer")]
    pub resource_url: Option<String>,
    /// On SIGTERM or SIGINT, drain this long before stopping (e.g. `10s` behind a load
    /// balancer): /healthz and every new request answer 503 with `Connection: close` while
    /// calls in flight finish; then the server stops accepting and exits once they are done.
    #[arg(long, env = "ENGRAM_DRAIN", default_value = "0s", value_parser = humantime::parse_duration)]
    pub drain: Duration,
    /// Each tool call's time limit in the store, e.g. `30s`: waiting for a connection or a
    /// lock and running its statements. A call past it fails (the agent sees why) and changes
    /// nothing. Searches wait for the embedder within a budget of their own (3 s).
    #[arg(long, env = "ENGRAM_CALL_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub call_timeout: Duration,
    /// Serve Prometheus metrics at http://ADDR/metrics, on a listener of their own (off unless
    /// given). When tokens are required, a scrape needs one too: a workspace's token shows
    /// that workspace's series only; `--metrics-token` shows them all.
    #[arg(long, env = "ENGRAM_METRICS_BIND", value_name = "ADDR")]
    pub metrics_bind: Option<SocketAddr>,
    /// The operator's secret for scraping every workspace's metrics (`Authorization: Bearer
    /// SECRET`), at least 24 characters; better given in the environment than on the command
    /// line.
    #[arg(long, env = "ENGRAM_METRICS_TOKEN", value_name = "SECRET", hide_env_values = true,
          requires = "metrics_bind", value_parser = operator_secret)]
    pub metrics_token: Option<String>,
    /// The tools to offer (the others are neither listed nor callable): `default` (every tool
    /// but groups `graph` and `reflections`), `all`, or tools and groups separated by commas:
    /// `core` (the reference memory server's nine and `search_observations`), `graph` (the
    /// graph vocabulary: `find_all_paths`, `get_graph_vocabulary`, `describe_node`,
    /// `get_subgraph`, `get_relations`), `reflections` (`add_reflection`,
    /// `search_reflections`), `read` (every tool that changes nothing), tool names, e.g.
    /// `core,get_stats` or `default,graph`. Fewer tools cost a model less context.
    #[arg(long, env = "ENGRAM_TOOLS", default_value = "default")]
    pub tools: engram_mcp::ToolSet,
    /// Rank search results by use too: a node read often and lately, or found often with the
    /// first result, gains a little (at most half a unit of log-odds). Off by default: on
    /// conversations it was not tuned on it cost recall (BENCHMARKS.md, "Ranking by use").
    #[arg(
        long,
        env = "ENGRAM_ACCESS_RANKING",
        conflicts_with = "no_access_tracking"
    )]
    pub access_ranking: bool,
    /// Do not note which nodes reads and searches return (the report's `stale_nodes` then
    /// sees only writes). By default they are noted in memory and written every 5 s.
    #[arg(long, env = "ENGRAM_NO_ACCESS_TRACKING")]
    pub no_access_tracking: bool,
    /// Serve over stdin/stdout instead of HTTP (for clients that launch engram themselves).
    #[arg(long, requires = "workspace")]
    pub stdio: bool,
    /// The workspace a stdio session works in, and a TCP connection that names none (HTTP
    /// clients send X-Memory-Workspace).
    #[arg(long, env = "ENGRAM_WORKSPACE")]
    pub workspace: Option<String>,
    /// Also serve MCP as newline-delimited JSON-RPC over TCP on this address, e.g.
    /// `127.0.0.1:8766`: a connection's `initialize` carries in `params._meta` what HTTP
    /// carries in headers (`authorization`: "Bearer TOKEN", `x-memory-workspace`); tokens are
    /// required as on HTTP; at most 128 connections at once.
    #[arg(
        long,
        env = "ENGRAM_TCP",
        value_name = "ADDR",
        conflicts_with = "stdio"
    )]
    pub tcp: Option<SocketAddr>,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token granting one workspace and print it (once: only its hash is kept).
    Create {
        /// The workspace it grants.
        #[arg(long, env = "ENGRAM_WORKSPACE")]
        workspace: String,
        /// Allow only the tools that change nothing.
        #[arg(long)]
        read_only: bool,
        /// How long it works, e.g. `90d`, `12h`, `1y`; forever when omitted.
        #[arg(long, value_parser = humantime::parse_duration)]
        expires: Option<Duration>,
        /// A note on who or what holds it, shown by `token list`.
        #[arg(long)]
        label: Option<String>,
    },
    /// List tokens (never their secrets).
    List {
        /// Only this workspace's.
        #[arg(long)]
        workspace: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token (by the id `token list` shows, or the token itself); every engram
    /// process on this database refuses it from the next request on.
    Revoke {
        /// The token's id or the token.
        token: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Create a workspace (1–64 characters of A–Z a–z 0–9 . _ -).
    Create {
        /// The new workspace's name.
        name: String,
    },
    /// List workspaces with their node counts.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Rename a workspace; clients bound to the old name must switch to the new one.
    Rename {
        /// The current name.
        name: String,
        /// The new name.
        new_name: String,
    },
    /// List and change a workspace's embedding perspectives.
    #[command(subcommand)]
    Perspectives(PerspectiveCommand),
    /// Delete a workspace and everything in it.
    Delete {
        /// The workspace to delete.
        name: String,
        /// Delete even if it holds nodes.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PerspectiveCommand {
    /// List a workspace's perspectives with their templates.
    List {
        #[command(flatten)]
        workspace: WorkspaceArg,
    },
    /// Add a perspective, or change or enable/disable one. Templates use `{observation}`,
    /// `{name}`, `{entity_type}`, `{tags}`, `{summary}`, `{relations}`, `{ordinal}`, `{date}`
    /// (document) and `{query}` (query). Changing a document template re-embeds it.
    Set {
        /// `[WORKSPACE] NAME`: the workspace (unless `--workspace` names it), then the
        /// perspective, e.g. `general` or a new name.
        #[arg(value_name = "WORKSPACE NAME", num_args = 1..=2, required = true)]
        names: Vec<String>,
        /// The workspace.
        #[arg(long = "workspace", value_name = "NAME")]
        workspace: Option<String>,
        /// The document template (default: unchanged, or `{name}: {observation}` when new).
        #[arg(long)]
        document: Option<String>,
        /// The query template (default: unchanged, or `{query}` when new).
        #[arg(long)]
        query: Option<String>,
        /// Stop indexing and searching this perspective.
        #[arg(long, conflicts_with = "enable")]
        disable: bool,
        /// Index and search this perspective again.
        #[arg(long)]
        enable: bool,
    },
}

/// The workspace and perspective `perspectives set` was given: `WORKSPACE NAME`, or
/// `--workspace WORKSPACE NAME`.
///
/// # Errors
/// A message naming what is missing or extra.
pub fn workspace_and_name(
    names: &[String],
    workspace: Option<&str>,
) -> Result<(String, String), String> {
    match (names, workspace) {
        ([workspace, name], None) => Ok((workspace.clone(), name.clone())),
        ([name], Some(workspace)) => Ok((workspace.to_owned(), name.clone())),
        ([_], None) => {
            Err("name the workspace: `WORKSPACE NAME` or `--workspace WORKSPACE NAME`".into())
        }
        (_, Some(_)) => {
            Err("the workspace is named twice: give `--workspace` or the positional one".into())
        }
        _ => Err("expected `[WORKSPACE] NAME`".into()),
    }
}

/// Parses `--secrets`.
fn parse_secret_policy(name: &str) -> Result<engram_domain::SecretPolicy, String> {
    name.parse()
}

/// Parses `--model` ([`LocalModel`]'s names).
fn parse_model(name: &str) -> Result<LocalModel, String> {
    name.parse()
}

/// The shortest `--metrics-token` accepted.
const OPERATOR_SECRET_MIN: usize = 24;

/// Checks `--metrics-token`: long enough not to be guessed.
fn operator_secret(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.chars().count() < OPERATOR_SECRET_MIN {
        return Err(format!(
            "at least {OPERATOR_SECRET_MIN} characters (e.g. `openssl rand -hex 24`)"
        ));
    }
    Ok(value.to_owned())
}
