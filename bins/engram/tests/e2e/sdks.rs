//! The official MCP SDKs at their default settings read every answer engram gives over
//! Streamable HTTP (issue: "every answer reaches every client at its defaults"): the Python SDK
//! (`mcp` 2.x refuses one SSE event over 1 MiB) and the TypeScript SDK add 300 texts of 64 KiB
//! in one call (an answer of about 20 MB) and read them all back with `open_nodes`, in as many
//! calls as its notices say. `cargo xtask test` installs both SDKs and names them in
//! `ENGRAM_TEST_PYTHON_SDK` (a Python interpreter) and `ENGRAM_TEST_TYPESCRIPT_SDK` (a
//! `node_modules` folder); without them a test says why it was skipped.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::server::{Backend, TestServer};

const TEXTS: u64 = 300;

/// Runs one SDK's client script against a fresh server and checks what it read.
async fn reads_every_answer(backend: Backend, variable: &str, run: fn(&Path, &str) -> Command) {
    let Some(sdk) = std::env::var_os(variable) else {
        eprintln!("skipped: {variable} names no SDK (`cargo xtask test` installs it)");
        return;
    };
    let server = TestServer::start(backend, &["sdk"]).await;
    let url = format!("{}/mcp", server.base);
    let mut command = run(Path::new(&sdk), &url);
    command.args(["sdk", &TEXTS.to_string()]);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(read["added"], TEXTS, "{read}");
    assert_eq!(read["read"], TEXTS, "{read}");
    // 300 × 64 KiB is 18.75 MiB of text; `open_nodes` answers up to 8 MiB of it at a time.
    assert_eq!(read["calls"], 3, "{read}");
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/fixtures")
        .join(name)
}

pub async fn the_python_sdk_reads_every_answer_at_its_defaults(backend: Backend) {
    reads_every_answer(backend, "ENGRAM_TEST_PYTHON_SDK", |python, url| {
        let mut command = Command::new(python);
        command.arg(fixture("sdk_client.py")).arg(url);
        command
    })
    .await;
}

pub async fn the_typescript_sdk_reads_every_answer_at_its_defaults(backend: Backend) {
    reads_every_answer(backend, "ENGRAM_TEST_TYPESCRIPT_SDK", |modules, url| {
        let mut command = Command::new("node");
        command
            .env("NODE_PATH", modules)
            .arg(fixture("sdk_client.mjs"))
            .arg(url);
        command
    })
    .await;
}
