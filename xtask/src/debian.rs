//! Debian programs some tests need, installed with apt when missing: Chromium and ChromeDriver
//! for the viewer's browser test (`bins/engram/tests/e2e/browser.rs`, which skips itself with
//! the reason where they cannot be had), and Prometheus' `promtool`, whose parser checks the
//! metrics page (`bins/engram/tests/e2e/observability.rs`), and PgBouncer and HAProxy for
//! the team test (`tests/tests/fault/team.rs`) and `cargo xtask cluster`.

use std::path::Path;

use crate::cmd;

/// A program a test needs and the packages that bring it.
struct Needed {
    program: &'static str,
    packages: &'static [&'static str],
    purpose: &'static str,
}

const NEEDED: [Needed; 5] = [
    Needed {
        program: "/usr/bin/chromedriver",
        packages: &["chromium", "chromium-driver"],
        purpose: "the browser test",
    },
    Needed {
        program: "/usr/bin/promtool",
        packages: &["prometheus"],
        purpose: "the metrics page's parser check",
    },
    Needed {
        program: "/usr/bin/openssl",
        packages: &["openssl"],
        purpose: "the certificates of the TLS test",
    },
    Needed {
        program: "/usr/sbin/pgbouncer",
        packages: &["pgbouncer"],
        purpose: "the team test's connection pooler",
    },
    Needed {
        program: "/usr/sbin/haproxy",
        packages: &["haproxy"],
        purpose: "the team test's load balancer",
    },
];

/// Installs, in one apt run, the packages of every [`NEEDED`] program that is missing; says
/// so when that fails (the tests that need them then fail or skip with the reason).
pub fn ensure() {
    let missing: Vec<&Needed> = (NEEDED.iter())
        .filter(|needed| !Path::new(needed.program).exists())
        .collect();
    if missing.is_empty() {
        return;
    }
    let packages: Vec<&str> = missing
        .iter()
        .flat_map(|n| n.packages.iter().copied())
        .collect();
    let purposes: Vec<&str> = missing.iter().map(|n| n.purpose).collect();
    println!(
        "engram: installing {} for {} …",
        packages.join(", "),
        purposes.join(" and ")
    );
    if let Err(error) = install(&packages) {
        println!("engram: cannot install {} ({error:#})", packages.join(", "));
    }
}

/// `apt-get install` of `packages` (after an `apt-get update`), as root.
pub fn install(packages: &[&str]) -> anyhow::Result<()> {
    let mut update = cmd::as_root("env")?;
    cmd::run(update.args(["DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "update"]))?;
    let mut install = cmd::as_root("env")?;
    cmd::run(
        install
            .args(["DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y"])
            .args(["--no-install-recommends", "install"])
            .args(packages),
    )
}
