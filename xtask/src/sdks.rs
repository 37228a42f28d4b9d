//! The official MCP SDKs the e2e suite reads engram's answers with
//! (`bins/engram/tests/e2e/sdks.rs`): the Python SDK in a virtual environment and the
//! TypeScript SDK in a `node_modules` folder, both under `target/sdks`, installed once at
//! pinned versions. Python's `venv` and Node.js come from apt when missing. A failure is said
//! and the tests that need an SDK say they were skipped and why.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::cmd;

/// The Python SDK: 2.x refuses one SSE event over 1 MiB at its defaults.
const PYTHON_SDK: &str = "mcp==2.3.0";
/// The TypeScript SDK.
const TYPESCRIPT_SDK: &str = "@modelcontextprotocol/sdk@1.32.2";
/// Names the Python interpreter of the virtual environment that holds [`PYTHON_SDK`].
pub const PYTHON_VAR: &str = "ENGRAM_TEST_PYTHON_SDK";
/// Names the `node_modules` folder that holds [`TYPESCRIPT_SDK`].
pub const TYPESCRIPT_VAR: &str = "ENGRAM_TEST_TYPESCRIPT_SDK";

/// Installs what is missing and returns the variables to hand the tests: each SDK that could
/// be had, or nothing for one that could not (with the reason printed).
pub fn ensure(target: &Path) -> Vec<(&'static str, PathBuf)> {
    let dir = target.join("sdks");
    let mut found = Vec::new();
    match python(&dir.join("python")) {
        Ok(python) => found.push((PYTHON_VAR, python)),
        Err(error) => println!("engram: no Python MCP SDK for the tests: {error:#}"),
    }
    match typescript(&dir.join("typescript")) {
        Ok(modules) => found.push((TYPESCRIPT_VAR, modules)),
        Err(error) => println!("engram: no TypeScript MCP SDK for the tests: {error:#}"),
    }
    found
}

fn python(venv: &Path) -> Result<PathBuf> {
    let python = venv.join("bin").join("python");
    let marker = venv.join(PYTHON_SDK);
    if marker.is_file() {
        return Ok(python);
    }
    if !cmd::succeeds(Command::new("python3").args(["-m", "venv", "--help"]))
        || !cmd::succeeds(Command::new("python3").args(["-m", "ensurepip", "--version"]))
    {
        println!("engram: installing python3-venv …");
        crate::debian::install(&["python3", "python3-venv"])?;
    }
    println!("engram: installing {PYTHON_SDK} for the SDK tests …");
    cmd::output(
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(venv),
    )?;
    cmd::output(Command::new(&python).args(["-m", "pip", "install", "--quiet", PYTHON_SDK]))?;
    std::fs::write(&marker, "").context("marking the Python SDK installed")?;
    Ok(python)
}

fn typescript(prefix: &Path) -> Result<PathBuf> {
    let modules = prefix.join("node_modules");
    let marker = prefix.join(TYPESCRIPT_SDK.replace('/', "_"));
    if marker.is_file() {
        return Ok(modules);
    }
    if cmd::find_in_path("npm").is_none() || cmd::find_in_path("node").is_none() {
        println!("engram: installing nodejs, npm …");
        crate::debian::install(&["nodejs", "npm"])?;
    }
    println!("engram: installing {TYPESCRIPT_SDK} for the SDK tests …");
    std::fs::create_dir_all(prefix).context("making the TypeScript SDK's folder")?;
    cmd::output(
        Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(prefix)
            .arg(TYPESCRIPT_SDK),
    )?;
    std::fs::write(&marker, "").context("marking the TypeScript SDK installed")?;
    Ok(modules)
}
