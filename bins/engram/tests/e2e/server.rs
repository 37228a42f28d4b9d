//! A real engram HTTP server on a free loopback port, over a fresh database.

use std::collections::HashMap;
use std::sync::Arc;

use engram::http::{Guard, WORKSPACE_HEADER};
use engram_domain::{GenerationBudget, Memory, TextGenerator};
use engram_pg::PgStore;
use engram_sqlite::SqliteStore;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use tokio::sync::oneshot;

/// A connected MCP client.
pub type Client = RunningService<RoleClient, ()>;

/// The store a test server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A fresh PostgreSQL database (`engram_pg::testing`).
    Postgres,
    /// A fresh SQLite file in a temporary directory.
    Sqlite,
}

/// The running server; stops when dropped.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The database URL (or SQLite file), for processes of their own (stdio).
    pub database_url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Makes rustls's ring provider the process's: reqwest is built with rustls and no provider
/// of its own (the binary installs the same one in `main`), so every HTTP client of a test
/// process needs it first.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl TestServer {
    /// Starts a server with workspaces `names` already created.
    pub async fn start(backend: Backend, workspaces: &[&str]) -> Self {
        Self::start_with_generator(backend, workspaces, None).await
    }

    /// Starts a server with workspaces `names` whose local embedder runs `model`.
    pub async fn start_with_model(
        backend: Backend,
        workspaces: &[&str],
        model: engram_embed::LocalModel,
    ) -> Self {
        Self::launch_with(backend, workspaces, None, Guard::default(), model).await
    }

    /// Starts a server with workspaces `names` already created whose consolidation report
    /// asks `generator` for its texts.
    pub async fn start_with_generator(
        backend: Backend,
        workspaces: &[&str],
        generator: Option<(Arc<dyn TextGenerator>, GenerationBudget)>,
    ) -> Self {
        Self::launch(backend, workspaces, generator, Guard::default()).await
    }

    /// Starts a server with workspaces `names` that requires a token on every request.
    pub async fn start_requiring_tokens(backend: Backend, workspaces: &[&str]) -> Self {
        let guard = Guard {
            require_auth: true,
            ..Guard::default()
        };
        Self::launch(backend, workspaces, None, guard).await
    }

    /// Starts a server with workspaces `names` behind `guard`.
    pub async fn start_with_guard(backend: Backend, workspaces: &[&str], guard: Guard) -> Self {
        Self::launch(backend, workspaces, None, guard).await
    }

    async fn launch(
        backend: Backend,
        workspaces: &[&str],
        generator: Option<(Arc<dyn TextGenerator>, GenerationBudget)>,
        guard: Guard,
    ) -> Self {
        let model = engram_embed::LocalModel::default();
        Self::launch_with(backend, workspaces, generator, guard, model).await
    }

    async fn launch_with(
        backend: Backend,
        workspaces: &[&str],
        generator: Option<(Arc<dyn TextGenerator>, GenerationBudget)>,
        guard: Guard,
        model: engram_embed::LocalModel,
    ) -> Self {
        install_tls_provider();
        let (store, database_url): (Arc<dyn engram_domain::MemoryStore>, _) = match backend {
            Backend::Postgres => {
                let url = engram_pg::testing::fresh_database().await;
                (Arc::new(PgStore::connect(&url).await.unwrap()), url)
            }
            Backend::Sqlite => {
                // Kept where engram-sqlite's tests keep theirs: `cargo xtask test` counts
                // them, and those tests sweep them away after an hour.
                let dir = tempfile::Builder::new()
                    .prefix("engram-sqlite-")
                    .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                    .unwrap()
                    .keep();
                let path = dir.join("engram.db");
                let store = SqliteStore::open(&path).await.unwrap();
                (Arc::new(store), path.display().to_string())
            }
        };
        let embedder: Arc<dyn engram_domain::Embedder> =
            Arc::new(engram_embed::LocalEmbedder::new(model));
        let indexer = engram::indexing::indexer(store.clone(), embedder.clone());
        let mut memory = Memory::new(store.clone())
            .with_embedder(embedder.clone())
            .with_indexer(indexer.clone());
        if let Some((generator, budget)) = generator {
            memory = memory.with_generator(generator, budget);
        }
        for name in workspaces {
            memory.create_workspace(name).await.unwrap();
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let server_memory = memory.clone();
        let indexing = tokio_util::sync::CancellationToken::new();
        tokio::spawn(engram::indexing::run_indexer(
            indexer,
            store,
            indexing.clone(),
        ));
        tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
                indexing.cancel();
            };
            engram::http::serve(server_memory, guard, listener, shutdown)
                .await
                .unwrap();
        });
        Self {
            base,
            database_url,
            stop: Some(stop),
        }
    }

    /// An rmcp client over Streamable HTTP, bound to `workspace`.
    pub async fn streamable_client(&self, workspace: &str) -> Client {
        streamable_client(&self.base, workspace).await
    }
}

/// An rmcp client over Streamable HTTP to the server at `base` (`http://HOST:PORT`), bound to
/// `workspace`.
pub async fn streamable_client(base: &str, workspace: &str) -> Client {
    streamable_client_with_token(base, workspace, None).await
}

/// [`streamable_client`], sending `Authorization: Bearer token` when given.
pub async fn streamable_client_with_token(
    base: &str,
    workspace: &str,
    token: Option<&str>,
) -> Client {
    install_tls_provider();
    let mut headers = HashMap::from([(
        WORKSPACE_HEADER.parse().unwrap(),
        workspace.parse().unwrap(),
    )]);
    if let Some(token) = token {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
    }
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    ().serve(transport).await.unwrap()
}
