//! PostgreSQL for development and tests: install it (with pgvector), run private
//! clusters, and describe a server.
//!
//! A throwaway test cluster is `ensure_installed()` + `Cluster::start(&pg, &ClusterConfig::test(..))`;
//! a persistent development cluster the same with `ClusterConfig::dev(..)`.

mod cluster;
mod install;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result};

pub use cluster::{Cluster, ClusterConfig};
pub use install::ensure_installed;

use crate::cmd;

/// Where Debian installs PostgreSQL's server binaries, one directory per major version.
const PG_LIB: &str = "/usr/lib/postgresql";

/// An installed PostgreSQL major version (Debian layout).
#[derive(Clone, Debug)]
pub struct PgInstall {
    /// Major version, e.g. 15.
    pub version: u32,
}

impl PgInstall {
    /// `/usr/lib/postgresql/<version>/bin/<name>`.
    pub fn bin(&self, name: &str) -> PathBuf {
        Path::new(PG_LIB)
            .join(self.version.to_string())
            .join("bin")
            .join(name)
    }
}

/// Major versions that have `/usr/lib/postgresql/<v>/bin/<name>`, ascending.
fn versions_with(name: &str) -> Vec<u32> {
    let Ok(entries) = fs::read_dir(PG_LIB) else {
        return Vec::new();
    };
    let mut versions: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&version| PgInstall { version }.bin(name).is_file())
        .collect();
    versions.sort_unstable();
    versions
}

/// The directory of the newest installed server's programs (`initdb`, `pg_ctl`), if any.
pub fn find_server_bin() -> Option<PathBuf> {
    let version = *versions_with("pg_ctl").last()?;
    let pg_ctl = PgInstall { version }.bin("pg_ctl");
    pg_ctl.parent().map(Path::to_path_buf)
}

/// A `psql` client: the one of `pg` if given, else from PATH, else the newest installed.
pub fn find_psql(pg: Option<&PgInstall>) -> Option<PathBuf> {
    let own = pg.map(|pg| pg.bin("psql")).filter(|path| path.is_file());
    own.or_else(|| cmd::find_in_path("psql")).or_else(|| {
        let version = *versions_with("psql").last()?;
        Some(PgInstall { version }.bin("psql"))
    })
}

/// One line describing what ran against the server at `url`:
/// `engram: N tests ran against PostgreSQL X with pgvector Y`.
///
/// Every storage test creates exactly one `engram_test_*` database.
pub fn report(psql: &Path, url: &str) -> Result<String> {
    const QUERY: &str = r"SELECT
        (SELECT count(*) FROM pg_database WHERE datname LIKE 'engram\_test\_%'),
        split_part(current_setting('server_version'), ' ', 1),
        coalesce((SELECT default_version FROM pg_available_extensions WHERE name = 'vector'),
                 'not available')";
    let out = cmd::output(
        Command::new(psql)
            .args([
                "-X", "-A", "-t", "-q", "-w", "-F", "|", "-d", url, "-c", QUERY,
            ])
            .env("PGCONNECT_TIMEOUT", "10"),
    )
    .context("cannot query the test server")?;
    let fields: Vec<&str> = out.trim().split('|').collect();
    let [count, version, vector] = fields[..] else {
        anyhow::bail!("unexpected psql output: {out:?}");
    };
    let tests = if count == "1" { "test" } else { "tests" };
    Ok(format!(
        "engram: {count} {tests} ran against PostgreSQL {version} with pgvector {vector}"
    ))
}
