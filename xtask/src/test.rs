//! `cargo xtask test`: lint and test the workspace against a private PostgreSQL.

use std::{
    env,
    process::{Command, ExitCode},
};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::{
    cargo, cmd,
    postgres::{self, Cluster, ClusterConfig},
    target_dir, workspace_root,
};

/// The variable through which tests find their PostgreSQL server.
const DATABASE_URL_VAR: &str = "ENGRAM_TEST_DATABASE_URL";
/// The variable through which tests find PostgreSQL's server programs (`initdb`, `pg_ctl`),
/// for clusters of their own (the fault tests restart one under load).
const PG_BIN_VAR: &str = "ENGRAM_TEST_PG_BIN";
/// The variable through which tests find PgBouncer in front of the test server (the
/// conformance suite runs through it too).
const PGBOUNCER_URL_VAR: &str = "ENGRAM_TEST_PGBOUNCER_URL";

/// Options of `cargo xtask test`.
#[derive(Args)]
pub struct TestArgs {
    /// Skip `cargo fmt --check` and `cargo clippy`; only run the tests.
    #[arg(long)]
    no_lint: bool,
    /// Passed on to the test runner (cargo nextest run, or cargo test), e.g. a test filter.
    #[arg(last = true, value_name = "RUNNER_ARGS")]
    runner_args: Vec<String>,
}

/// Runs `cargo xtask test`.
pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let mut held_lock = None;
    let external = env::var(DATABASE_URL_VAR)
        .ok()
        .filter(|url| !url.is_empty());
    let (url, cluster, psql, pg_bin) = match external {
        Some(url) => {
            println!("engram: testing against {DATABASE_URL_VAR}={url}");
            let pg_bin = env::var_os(PG_BIN_VAR)
                .map(std::path::PathBuf::from)
                .or_else(postgres::find_server_bin);
            (url, None, postgres::find_psql(None), pg_bin)
        }
        None => {
            let pg = postgres::ensure_installed(&target_dir())?;
            // One private cluster directory per checkout: a second run waits for the first
            // instead of stopping its cluster under its tests.
            let lock = std::fs::File::create(target_dir().join("engram-test-pg.lock"))
                .context("creating the test cluster's lock file")?;
            if lock.try_lock().is_err() {
                println!(
                    "engram: another `cargo xtask test` runs in this checkout; waiting for it"
                );
                lock.lock().context("waiting for the test cluster's lock")?;
            }
            held_lock = Some(lock);
            let cluster = Cluster::start(&pg, &ClusterConfig::test(&target_dir()))?;
            let url = cluster.url();
            println!(
                "engram: started PostgreSQL {} at {url} (in {})",
                pg.version,
                cluster.dir().display()
            );
            let pg_bin = pg.bin("pg_ctl").parent().map(std::path::Path::to_path_buf);
            (url, Some(cluster), postgres::find_psql(Some(&pg)), pg_bin)
        }
    };

    crate::debian::ensure();
    let sdks = crate::sdks::ensure(&target_dir());
    // The conformance suite runs through PgBouncer too: in front of our own cluster, or the
    // one ENGRAM_TEST_PGBOUNCER_URL names beside an external server.
    let (bouncer, bouncer_url) = match &cluster {
        Some(cluster) => {
            // Beside the cluster's data: a directory the server's user can reach.
            let dir = cluster.dir().join("pgbouncer");
            let bouncer = crate::pgbouncer::PgBouncer::for_tests(cluster, &dir)?;
            let bouncer_url = bouncer.url("postgres");
            println!("engram: started PgBouncer (transaction pooling) at {bouncer_url}");
            (Some(bouncer), Some(bouncer_url))
        }
        None => (None, env::var(PGBOUNCER_URL_VAR).ok()),
    };
    let started = std::time::SystemTime::now();
    let outcome = run_steps(args, &url, pg_bin.as_deref(), bouncer_url.as_deref(), &sdks);
    drop(bouncer);

    match psql {
        Some(psql) => match postgres::report(&psql, &url) {
            Ok(line) => println!("{line}"),
            Err(err) => eprintln!("engram: warning: {err:#}"),
        },
        None => eprintln!("engram: warning: no psql found, cannot report on the test server"),
    }
    drop(cluster);
    drop(held_lock);
    println!("{}", sqlite_report(started));

    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            eprintln!("engram: {err:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// fmt, clippy and the tests, stopping at the first failure. `pg_bin` (the directory of
/// `initdb` and `pg_ctl`, when known) reaches the tests as `ENGRAM_TEST_PG_BIN`; each of
/// `sdks` (an official MCP SDK) as its variable.
fn run_steps(
    args: &TestArgs,
    url: &str,
    pg_bin: Option<&std::path::Path>,
    bouncer_url: Option<&str>,
    sdks: &[(&str, std::path::PathBuf)],
) -> Result<()> {
    let root = workspace_root();
    let mut steps = Vec::new();
    if !args.no_lint {
        let mut fmt = cargo();
        fmt.args(["fmt", "--all", "--", "--check"]);
        steps.push(fmt);
        let mut clippy = cargo();
        clippy.args(["clippy", "--workspace", "--all-targets"]);
        if root.join("Cargo.lock").is_file() {
            clippy.arg("--locked");
        }
        clippy.args(["--", "-D", "warnings"]);
        steps.push(clippy);
    }
    if !args.no_lint {
        crate::deny::check()?;
    }
    // The local embedding model, fetched once into its cache before tests run in parallel.
    let mut model = cargo();
    model.args([
        "run",
        "--quiet",
        "-p",
        "engram",
        "--",
        "fetch-model",
        "--model",
        "all",
    ]);
    steps.push(model);
    let mut tests = cargo();
    if cmd::succeeds(cargo().args(["nextest", "--version"])) {
        tests.args(["nextest", "run", "--no-fail-fast"]);
    } else {
        println!("engram: cargo nextest is not installed; using cargo test");
        tests.arg("test");
    }
    // The whole workspace unless the arguments choose packages (`-- -p engram-fault-tests`):
    // cargo would take `--workspace` over them and build everything.
    if !chooses_packages(&args.runner_args) {
        tests.arg("--workspace");
    }
    tests.args(&args.runner_args);
    steps.push(tests);

    for mut step in steps {
        step.current_dir(root).env(DATABASE_URL_VAR, url);
        if let Some(pg_bin) = pg_bin {
            step.env(PG_BIN_VAR, pg_bin);
        }
        if let Some(bouncer_url) = bouncer_url {
            step.env(PGBOUNCER_URL_VAR, bouncer_url);
        }
        step.envs(sdks.iter().map(|(var, path)| (var, path)));
        println!("engram: $ {}", show_cargo(&step));
        let status = step
            .status()
            .with_context(|| format!("cannot run `{}`", show_cargo(&step)))?;
        if !status.success() {
            bail!("`{}` failed ({status})", show_cargo(&step));
        }
    }
    Ok(())
}

/// Whether runner arguments select packages (`-p NAME`, `--package NAME`, `--package=NAME`).
fn chooses_packages(runner_args: &[String]) -> bool {
    runner_args
        .iter()
        .any(|arg| arg == "-p" || arg == "--package" || arg.starts_with("--package="))
}

/// A cargo command line as the user would type it (`cargo …`, not `$CARGO …`).
fn show_cargo(command: &Command) -> String {
    let shown = cmd::show(command);
    match shown.split_once(' ') {
        Some((_, args)) => format!("cargo {args}"),
        None => shown,
    }
}

/// Directories of SQLite test databases (`engram-sqlite-*` under `target/tmp`, one per test)
/// made since `since`: `engram: N tests ran against SQLite (bundled by libsqlite3-sys X)
/// with sqlite-vec Y`.
fn sqlite_report(since: std::time::SystemTime) -> String {
    let count = std::fs::read_dir(target_dir().join("tmp"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| {
                    entry
                        .file_name()
                        .to_string_lossy()
                        .starts_with("engram-sqlite-")
                })
                .filter(|entry| {
                    entry
                        .metadata()
                        .and_then(|m| m.created().or_else(|_| m.modified()))
                        .is_ok_and(|at| at >= since)
                })
                .count()
        })
        .unwrap_or(0);
    let lock = std::fs::read_to_string(workspace_root().join("Cargo.lock")).unwrap_or_default();
    let version = |name: &str| {
        lock.split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{name}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map_or_else(|| "?".to_owned(), |v| v.trim_matches('"').to_owned())
    };
    let tests = if count == 1 { "test" } else { "tests" };
    format!(
        "engram: {count} {tests} ran against SQLite (bundled by libsqlite3-sys {}) with \
         sqlite-vec {}",
        version("libsqlite3-sys"),
        version("sqlite-vec")
    )
}
