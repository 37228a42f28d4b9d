//! `cargo deny` as a step of `cargo xtask test`: licences, bans and sources always; security
//! advisories when the RustSec database can be fetched (it lives on github.com, which some
//! machines cannot reach: then a line says they were not checked, and why).

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, cmd, workspace_root};

/// The cargo-deny release installed when none is (newer ones are used as they are).
const CARGO_DENY_VERSION: &str = "0.20.2";

/// Installs cargo-deny if needed and checks the dependency graph against `deny.toml`.
pub fn check() -> Result<()> {
    if !cmd::succeeds(cargo().args(["deny", "--version"])) {
        println!("engram: installing cargo-deny {CARGO_DENY_VERSION} (once; a few minutes)");
        cmd::run(cargo().args([
            "install",
            "cargo-deny",
            "--locked",
            "--version",
            CARGO_DENY_VERSION,
        ]))?;
    }
    let mut policy = deny(&["bans", "licenses", "sources"]);
    println!("engram: $ cargo deny check bans licenses sources");
    let status = policy.status().context("running cargo deny")?;
    if !status.success() {
        bail!("`cargo deny check bans licenses sources` failed ({status}); see deny.toml");
    }
    println!("engram: $ cargo deny check advisories");
    let output = deny(&["advisories"])
        .output()
        .context("running cargo deny")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        println!("engram: advisories ok");
    } else if stderr.contains("failed to fetch advisory database") {
        println!(
            "engram: advisories not checked: the RustSec advisory database (github.com) cannot \
             be fetched from this machine"
        );
    } else {
        eprint!("{stderr}");
        bail!("`cargo deny check advisories` failed ({})", output.status);
    }
    Ok(())
}

fn deny(checks: &[&str]) -> Command {
    let mut command = cargo();
    command
        .current_dir(workspace_root())
        .args(["deny", "--log-level", "error", "check"])
        .args(checks);
    command
}
