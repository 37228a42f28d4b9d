//! `cargo xtask serve`: a working server from one command on a fresh machine. Brings up a
//! persistent private PostgreSQL with pgvector under `target/engram-dev-pg` (the same setup
//! the tests use), creates the `engram` database in it, and runs `engram serve` against it.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use crate::postgres::{self, Cluster, ClusterConfig};
use crate::{cargo, cmd, target_dir, workspace_root};

/// The database the development server keeps its graph in.
const DATABASE: &str = "engram";

/// Options of `cargo xtask serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Passed on to `engram serve`, e.g. `--create-workspace demo` or `--bind 0.0.0.0:8765`.
    #[arg(last = true, value_name = "SERVE_ARGS")]
    serve_args: Vec<String>,
}

/// Runs `cargo xtask serve`.
pub fn run(args: &ServeArgs) -> Result<ExitCode> {
    println!(
        "engram: finding PostgreSQL with pgvector (the first time it is installed: a few minutes)"
    );
    let pg = postgres::ensure_installed(&target_dir())?;
    println!("engram: starting PostgreSQL {} …", pg.version);
    let cluster = Cluster::start(&pg, &ClusterConfig::dev(&target_dir()))?;
    let psql = postgres::find_psql(Some(&pg)).context("psql not found")?;
    let exists = cmd::output(std::process::Command::new(&psql).arg(cluster.url()).args([
        "-tAc",
        &format!("SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"),
    ]))?;
    if exists.trim() != "1" {
        cmd::run(
            std::process::Command::new(&psql)
                .arg(cluster.url())
                .args(["-qc", &format!("CREATE DATABASE {DATABASE}")]),
        )?;
    }
    let server_url = cluster.url();
    let (server, _) = server_url.rsplit_once('/').expect("a URL with a database");
    let url = format!("{server}/{DATABASE}");
    println!(
        "engram: PostgreSQL with pgvector at {url} (data in {})",
        cluster.dir().display()
    );
    println!(
        "engram: manage workspaces with `ENGRAM_DATABASE_URL={url} cargo run --release -p engram -- workspace …`"
    );
    println!(
        "engram: building and starting `engram serve` (release; the first build takes minutes)"
    );
    let status = cargo()
        .current_dir(workspace_root())
        .args(["run", "--release", "--quiet", "-p", "engram", "--", "serve"])
        .args(&args.serve_args)
        .env("ENGRAM_DATABASE_URL", &url)
        .status()
        .context("cannot run cargo")?;
    drop(cluster);
    Ok(cmd::exit_code(status))
}
