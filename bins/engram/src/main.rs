//! The `engram` command: serve MCP, migrate the database, manage workspaces.

mod cli;
mod reindex;
mod report;

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use cli::{Cli, Command, PerspectiveCommand, ServeArgs, WorkspaceCommand};
use engram::http::Guard;
use engram_domain::{Memory, MemoryStore};
use engram_pg::PgStore;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    init_tracing();
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout is the protocol under `--stdio`); `ENGRAM_LOG` filters them.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ENGRAM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn run(cli: Cli) -> Result<()> {
    if let Command::FetchModel = cli.command {
        let dir = tokio::task::spawn_blocking(engram_embed::local::ensure_model_files).await??;
        println!("all-MiniLM-L6-v2 is in {}", dir.display());
        return Ok(());
    }
    let url = cli.database_url.context(
        "no database: set ENGRAM_DATABASE_URL or pass --database-url postgres://user@host:port/db",
    )?;
    let store = PgStore::connect(&url)
        .await
        .context("connecting to PostgreSQL")?;
    match cli.command {
        Command::Serve(args) => serve(store, args).await,
        Command::FetchModel => unreachable!("handled before connecting"),
        Command::Migrate => {
            let applied = store.migrate().await?;
            if applied.is_empty() {
                println!("database schema is up to date");
            }
            for migration in applied {
                println!("applied {migration}");
            }
            Ok(())
        }
        Command::Reindex { workspace, embed } => {
            ensure_migrated(&store).await?;
            reindex::run(Arc::new(store), &workspace, &embed.choice()).await
        }
        Command::Report(args) => {
            ensure_migrated(&store).await?;
            report::run(Arc::new(store), args).await
        }
        Command::Workspace(command) => {
            ensure_migrated(&store).await?;
            workspace(&Memory::new(Arc::new(store)), command).await
        }
    }
}

async fn ensure_migrated(store: &PgStore) -> Result<()> {
    anyhow::ensure!(
        store.is_migrated().await?,
        "the database schema is not current: run `engram migrate` first"
    );
    Ok(())
}

async fn serve(store: PgStore, args: ServeArgs) -> Result<()> {
    if args.no_migrate {
        ensure_migrated(&store).await?;
    } else {
        for migration in store.migrate().await? {
            tracing::info!(%migration, "applied migration");
        }
    }
    let store: Arc<dyn MemoryStore> = Arc::new(store);
    let shutdown = CancellationToken::new();
    let mut memory = Memory::new(store.clone());
    let embedder = args.embed.choice().build()?;
    if let Some(embedder) = &embedder {
        memory = memory.with_embedder(embedder.clone());
        tokio::spawn(engram::indexing::run_indexer(
            store.clone(),
            embedder.clone(),
            shutdown.clone(),
        ));
    }
    if let Some((generator, budget)) = args.generate.build(&args.embed.ollama_host)? {
        memory = memory.with_generator(generator, budget);
    }
    tracing::info!(
        store = "postgresql",
        embedder = memory.embedder().map_or("none", |e| e.model_id()),
        generator = memory
            .generator()
            .map_or("none (extractive drafts)", |g| g.model_id()),
        "engram starting"
    );
    if let Some(name) = &args.create_workspace {
        match memory.create_workspace(name).await {
            Ok(_) => tracing::info!(workspace = %name, "created workspace"),
            Err(engram_domain::Error::AlreadyExists { .. }) => {}
            Err(error) => return Err(error).context("--create-workspace"),
        }
    }
    if args.stdio {
        let name = args.workspace.context("--stdio needs --workspace NAME")?;
        let workspace = memory.workspace(&name).await.with_context(|| {
            format!("workspace {name:?}: create it with `engram workspace create {name}`")
        })?;
        tracing::info!(workspace = %workspace.name, "serving MCP over stdio");
        let served = engram::serve_stdio(memory, workspace).await;
        shutdown.cancel();
        return served;
    }
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("binding {}", args.bind))?;
    let address = listener.local_addr()?;
    tracing::info!(
        store = "postgresql",
        "engram listening on http://{address} (Streamable HTTP at /mcp, legacy SSE at /sse)"
    );
    let guard = Guard {
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
    };
    let stop = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stop.cancel();
    });
    engram::http::serve(memory, guard, listener, shutdown.cancelled_owned()).await?;
    tracing::info!("engram stopped");
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = interrupt => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

async fn workspace(memory: &Memory, command: WorkspaceCommand) -> Result<()> {
    match command {
        WorkspaceCommand::Create { name } => {
            let workspace = memory.create_workspace(&name).await?;
            println!("created workspace {}", workspace.name);
        }
        WorkspaceCommand::List { json } => {
            let workspaces = memory.list_workspaces().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&workspaces)?);
            } else if workspaces.is_empty() {
                println!("no workspaces yet: create one with `engram workspace create NAME`");
            } else {
                println!("{:<32} {:>8}  created", "name", "nodes");
                for info in workspaces {
                    println!(
                        "{:<32} {:>8}  {}",
                        info.workspace.name,
                        info.node_count,
                        info.workspace.created_at.format("%Y-%m-%d %H:%M UTC")
                    );
                }
            }
        }
        WorkspaceCommand::Rename { name, new_name } => {
            memory.rename_workspace(&name, &new_name).await?;
            println!("renamed workspace {name} to {new_name}");
        }
        WorkspaceCommand::Perspectives(command) => perspectives(memory, command).await?,
        WorkspaceCommand::Delete { name, force } => {
            memory.delete_workspace(&name, force).await?;
            println!("deleted workspace {name}");
        }
    }
    Ok(())
}

async fn perspectives(memory: &Memory, command: PerspectiveCommand) -> Result<()> {
    match command {
        PerspectiveCommand::List { workspace } => {
            let workspace = memory.workspace(&workspace).await?;
            for p in memory.perspectives(workspace.id).await? {
                let state = if p.enabled { "enabled" } else { "disabled" };
                println!("{} ({state})", p.name);
                println!("  document: {}", p.document_template);
                println!("  query:    {}", p.query_template);
            }
        }
        PerspectiveCommand::Set {
            workspace,
            name,
            document,
            query,
            disable,
            enable,
        } => {
            let workspace = memory.workspace(&workspace).await?;
            let existing = memory
                .perspectives(workspace.id)
                .await?
                .into_iter()
                .find(|p| p.name == name);
            let perspective = engram_domain::perspectives::Perspective {
                id: 0,
                document_template: document
                    .or_else(|| existing.as_ref().map(|p| p.document_template.clone()))
                    .unwrap_or_else(|| "{name}: {observation}".into()),
                query_template: query
                    .or_else(|| existing.as_ref().map(|p| p.query_template.clone()))
                    .unwrap_or_else(|| "{query}".into()),
                enabled: if disable {
                    false
                } else {
                    enable || existing.as_ref().is_none_or(|p| p.enabled)
                },
                name,
            };
            let stored = memory.set_perspective(workspace.id, &perspective).await?;
            let state = if stored.enabled {
                "enabled"
            } else {
                "disabled"
            };
            println!(
                "perspective {} of {} is set ({state})",
                stored.name, workspace.name
            );
        }
    }
    Ok(())
}
