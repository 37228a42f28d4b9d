//! The `engram` command: migrate the database and manage workspaces.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use engram_domain::Memory;
use engram_pg::PgStore;

/// engram: a knowledge-graph memory server for AI agents.
#[derive(Debug, Parser)]
#[command(name = "engram", version, about)]
struct Cli {
    /// PostgreSQL URL, `postgres://user:password@host:port/database`.
    #[arg(long, env = "ENGRAM_DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply the database migrations this build carries that the database lacks.
    Migrate,
    /// Create, list, rename and delete workspaces.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
}

#[derive(Debug, Subcommand)]
enum WorkspaceCommand {
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
    /// Delete a workspace and everything in it.
    Delete {
        /// The workspace to delete.
        name: String,
        /// Delete even if it holds nodes.
        #[arg(long)]
        force: bool,
    },
}

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

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ENGRAM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn run(cli: Cli) -> Result<()> {
    let url = cli.database_url.context(
        "no database: set ENGRAM_DATABASE_URL or pass --database-url postgres://user@host:port/db",
    )?;
    let store = PgStore::connect(&url)
        .await
        .context("connecting to PostgreSQL")?;
    match cli.command {
        Command::Migrate => {
            let applied = store.migrate().await?;
            if applied.is_empty() {
                println!("database schema is up to date");
            } else {
                for migration in applied {
                    println!("applied {migration}");
                }
            }
        }
        Command::Workspace(command) => {
            ensure_migrated(&store).await?;
            workspace(&Memory::new(Arc::new(store)), command).await?;
        }
    }
    Ok(())
}

async fn ensure_migrated(store: &PgStore) -> Result<()> {
    anyhow::ensure!(
        store.is_migrated().await?,
        "the database schema is not current: run `engram migrate` first"
    );
    Ok(())
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
        WorkspaceCommand::Delete { name, force } => {
            memory.delete_workspace(&name, force).await?;
            println!("deleted workspace {name}");
        }
    }
    Ok(())
}
