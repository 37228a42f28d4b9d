//! engram's developer task runner, invoked as `cargo xtask <command>`.
//!
//! - `cargo xtask test`: install PostgreSQL + pgvector if missing, start a throwaway
//!   cluster, run fmt, clippy and the test suite against it, report and stop it.
//! - `cargo xtask serve`: run the server against a persistent private PostgreSQL.
//! - `cargo xtask migrate`: apply the database migrations (`engram migrate`).
//! - `cargo xtask eval locomo`: retrieval on the LoCoMo dev data through the real server.
//! - `cargo xtask bench`: the consolidation report at 10,000 nodes, embedding throughput.
//! - `cargo xtask cluster`: engram for a team (replica, PgBouncer, two processes, HAProxy).

mod bench;
mod cmd;
mod debian;
mod deny;
mod eval;
mod import_cycles;
mod peers;
mod pgbouncer;
mod postgres;
mod scale;
mod sdks;
mod serve;
mod team;
mod test;
mod tidy;

use std::{
    env,
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

/// engram's developer tasks (run as `cargo xtask <command>`).
#[derive(Parser)]
#[command(name = "xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run fmt, clippy and all tests against a private PostgreSQL cluster (what CI runs).
    ///
    /// Installs PostgreSQL and pgvector >= 0.7 if missing (apt, as root or via `sudo -n`),
    /// unless ENGRAM_TEST_DATABASE_URL names a server to use instead.
    Test(test::TestArgs),
    /// Run `engram serve` against a persistent private PostgreSQL under target/ (installed
    /// and started when needed): a working server from one command.
    Serve(serve::ServeArgs),
    /// Evaluate retrieval end to end through the real MCP server (`eval locomo`).
    Eval(eval::EvalArgs),
    /// Measure speed: the consolidation report at 10,000 nodes on PostgreSQL, and the local
    /// embedding model's throughput (figures for BENCHMARKS.md).
    Bench(bench::BenchArgs),
    /// Run engram for a team on this machine: PostgreSQL with a streaming replica, PgBouncer,
    /// two `engram serve` processes and HAProxy (`deploy/team/`), until Ctrl-C; `--bench`
    /// measures it against one process instead.
    Cluster(team::ClusterArgs),
    /// Apply the database migrations (runs `engram migrate`).
    Migrate {
        /// Database to migrate (passed on as `--database-url`).
        #[arg(long, env = "ENGRAM_DATABASE_URL")]
        database_url: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Task::Test(args) => test::run(&args),
        Task::Serve(args) => serve::run(&args),
        Task::Eval(args) => eval::run(&args),
        Task::Bench(args) => bench::run(&args),
        Task::Cluster(args) => team::run(&args),
        Task::Migrate { database_url } => migrate(database_url.as_deref()),
    };
    result.unwrap_or_else(|err| {
        eprintln!("engram: error: {err:#}");
        ExitCode::FAILURE
    })
}

fn migrate(database_url: Option<&str>) -> Result<ExitCode> {
    let mut command = cargo();
    command.current_dir(workspace_root());
    command.args(["run", "--quiet", "-p", "engram", "--", "migrate"]);
    if let Some(url) = database_url {
        command.args(["--database-url", url]);
    }
    let status = command.status().context("cannot run cargo")?;
    Ok(cmd::exit_code(status))
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` or `<root>/target`.
fn target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace_root().join(dir),
        _ => workspace_root().join("target"),
    }
}

/// A `Command` for the cargo that runs us (`$CARGO`), or `cargo` from PATH.
fn cargo() -> Command {
    let mut command = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // `cargo run -p xtask` describes xtask in these; a build script watching them (ring's
    // watches `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`) would rebuild, with everything above
    // it, whenever a build alternates between here and a shell.
    for (name, _) in env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                &*name,
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            )
        {
            command.env_remove(&*name);
        }
    }
    command
}
