//! The real `engram` binary: built once per test process with the cargo that runs the tests
//! (a test of another package cannot use `CARGO_BIN_EXE_engram`), then run as users run it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The path of the `engram` binary, built (`cargo build -p engram`) the first time it is
/// asked for in this process. Under `cargo xtask test` the build is already done (its
/// `fetch-model` step runs the binary), so this only checks it is current.
pub fn engram() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(build)
}

fn build() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the fault tests live in the workspace");
    let mut command = Command::new(cargo);
    command
        .args(["build", "-p", "engram", "--bin", "engram"])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(root)
        .stdin(Stdio::null());
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    // What cargo sets for this test process describes this package, not the build: a build
    // script watching one of them (ring's watches `CARGO_PKG_*`) would otherwise rebuild, and
    // everything above it, each time the binary is built from here and then from a shell.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let package_env = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                &*name,
                "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
                    | "OUT_DIR"
            );
        if package_env {
            command.env_remove(&*name);
        }
    }
    let output = command.output().expect("running cargo build -p engram");
    assert!(
        output.status.success(),
        "cargo build -p engram failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let built = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact" && message["target"]["name"] == "engram"
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from));
    let binary = built.unwrap_or_else(|| {
        // `target/<profile>/deps/fault-…` → `target/<profile>/engram`.
        let exe = std::env::current_exe().expect("the test's own path");
        exe.parent()
            .and_then(Path::parent)
            .expect("the test binary lives in target/<profile>/deps")
            .join("engram")
    });
    assert!(binary.is_file(), "no engram binary at {}", binary.display());
    binary
}

/// `engram` with a clean environment: no database, embedder or Ollama from the caller's
/// shell, plain warning-level logs.
pub fn command() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(engram());
    command
        .env_remove("ENGRAM_DATABASE_URL")
        .env_remove("ENGRAM_EMBEDDER")
        .env_remove("ENGRAM_WORKSPACE")
        .env_remove("OLLAMA_HOST")
        .env_remove("ENGRAM_EMBED_MODEL")
        .env_remove("ENGRAM_GENERATE_MODEL")
        .env("ENGRAM_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Runs `engram ARGS --database-url URL` to completion.
pub async fn run(args: &[&str], database_url: &str) -> Output {
    command()
        .args(args)
        .args(["--database-url", database_url])
        .output()
        .await
        .expect("running engram")
}

/// Runs `engram ARGS --database-url URL` and panics unless it succeeds.
pub async fn run_ok(args: &[&str], database_url: &str) -> Output {
    let output = run(args, database_url).await;
    assert!(
        output.status.success(),
        "engram {args:?} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
