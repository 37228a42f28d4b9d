//! `engram recall`, `engram brief` and `engram hooks claude-code` run as a person (and as
//! Claude Code) runs them, and `engram import` keeping secrets out line by line.

use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::context::remember;
use crate::scenario::ok;
use crate::server::{Backend, TestServer};

/// `engram` as typed, with `stdin` on its standard input.
pub fn engram(args: &[&str], stdin: &str) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_engram")).args(args), stdin)
}

fn run(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = spawn(command);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `command` started with none of engram's connection settings from the environment,
/// warnings only in its log, no embedder, and its standard streams piped.
fn spawn(command: &mut Command) -> std::process::Child {
    command
        .env_remove("ENGRAM_DATABASE_URL")
        .env_remove("ENGRAM_URL")
        .env_remove("ENGRAM_TOKEN")
        .env("ENGRAM_LOG", "warn")
        .env("ENGRAM_EMBEDDER", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running engram")
}

pub fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub async fn recall_and_brief_read_a_server_or_the_database(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    remember(&server.streamable_client("demo").await).await;
    let url = server.base.as_str();
    let database = server.database_url.as_str();
    for source in [["--url", url], ["--database-url", database]] {
        let recalled = engram(
            &[
                &[
                    "recall",
                    "who runs the staging cluster",
                    "--workspace",
                    "demo",
                ],
                &source[..],
            ]
            .concat(),
            "",
        );
        let recalled = stdout(&recalled);
        assert!(
            recalled.starts_with("Memory on \"who runs the staging cluster\""),
            "{recalled}"
        );
        assert!(
            recalled.contains("- Ana María / infra [person]: "),
            "{recalled}"
        );
        let json = engram(
            &[
                &[
                    "recall",
                    "staging cluster",
                    "--workspace",
                    "demo",
                    "--format",
                    "json",
                ],
                &source[..],
            ]
            .concat(),
            "",
        );
        let json: Value = serde_json::from_str(&stdout(&json)).unwrap();
        assert_eq!(json["results"][0]["name"], "Ana María / infra");
        let nothing = engram(
            &[
                &["recall", "zxqv plorb", "--workspace", "demo"],
                &source[..],
            ]
            .concat(),
            "",
        );
        assert_eq!(stdout(&nothing), "", "nothing relevant prints nothing");
        let brief = engram(
            &[&["brief", "--workspace", "demo"], &source[..]].concat(),
            "",
        );
        let brief = stdout(&brief);
        assert!(
            brief.contains("- engram [project], 2 related: The memory server"),
            "{brief}"
        );
        let short = engram(
            &[
                &["brief", "--workspace", "demo", "--max-chars", "120"],
                &source[..],
            ]
            .concat(),
            "",
        );
        assert!(stdout(&short).chars().count() <= 120);
    }
    let unknown = engram(&["recall", "x", "--workspace", "nope", "--url", url], "");
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("nope"),
        "{unknown:?}"
    );
    // An address without its scheme is named as such.
    let bare = url.trim_start_matches("http://");
    let schemeless = engram(&["recall", "x", "--workspace", "demo", "--url", bare], "");
    assert!(!schemeless.status.success());
    assert!(
        String::from_utf8_lossy(&schemeless.stderr)
            .contains(&format!("give the scheme too, as in --url http://{bare}")),
        "{schemeless:?}"
    );
}

/// What Claude Code sends a `UserPromptSubmit` hook on standard input (its documented hook
/// input).
fn prompt_input(prompt: &str) -> String {
    json!({
        "session_id": "4b6f7c1e-0f5e-4a77-9d3c-2c1f0e9a8b7d",
        "transcript_path": "/home/user/.claude/projects/demo/4b6f7c1e.jsonl",
        "cwd": "/home/user/demo",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt
    })
    .to_string()
}

/// What Claude Code sends a `SessionStart` hook.
const SESSION_START: &str = r#"{"session_id":"4b6f7c1e-0f5e-4a77-9d3c-2c1f0e9a8b7d","transcript_path":"/home/user/.claude/projects/demo/4b6f7c1e.jsonl","cwd":"/home/user/demo","hook_event_name":"SessionStart","source":"startup"}"#;

/// The installed command of `event` in a settings file.
fn installed(settings: &Value, event: &str) -> String {
    let groups = settings["hooks"][event].as_array().unwrap();
    let engram = (groups.iter())
        .flat_map(|group| group["hooks"].as_array().unwrap())
        .find(|hook| hook["command"].as_str().unwrap().contains("--hook"))
        .unwrap_or_else(|| panic!("no engram hook under {event}: {settings}"));
    assert_eq!(engram["type"], "command");
    assert!(engram["timeout"].as_u64().unwrap() <= 10);
    engram["command"].as_str().unwrap().to_owned()
}

pub async fn claude_code_hooks_install_run_and_uninstall(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    remember(&server.streamable_client("demo").await).await;
    let dir = tempfile::tempdir().unwrap();
    let settings_path = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings_path.parent().unwrap()).unwrap();
    let before = json!({"model": "sonnet", "hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": "echo checked"}]}]}});
    std::fs::write(&settings_path, before.to_string()).unwrap();
    let settings = settings_path.to_str().unwrap();

    let printed = engram(
        &[
            "hooks",
            "claude-code",
            "--workspace",
            "demo",
            "--url",
            &server.base,
        ],
        "",
    );
    let printed: Value = serde_json::from_str(&stdout(&printed)).unwrap();
    assert!(installed(&printed, "SessionStart").contains(" brief --hook --workspace demo"));

    for _ in 0..2 {
        let install = engram(
            &[
                "hooks",
                "claude-code",
                "--workspace",
                "demo",
                "--url",
                &server.base,
                "--install",
                "--settings",
                settings,
            ],
            "",
        );
        assert!(
            stdout(&install).contains("installed engram's hooks"),
            "{install:?}"
        );
    }
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    assert_eq!(merged["model"], "sonnet");
    let prompt_hooks = merged["hooks"]["UserPromptSubmit"].as_array().unwrap();
    assert_eq!(
        prompt_hooks.len(),
        2,
        "installed once, the user's hook kept: {merged}"
    );
    let backups = std::fs::read_dir(settings_path.parent().unwrap())
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".engram-backup-")
        })
        .count();
    assert!(backups >= 1);

    // The installed commands, run by a shell as Claude Code runs them, with its input.
    let sh = |command: &str, input: &str| {
        run(
            Command::new("sh")
                .args(["-c", command])
                .current_dir(dir.path()),
            input,
        )
    };
    let start = sh(&installed(&merged, "SessionStart"), SESSION_START);
    assert!(
        stdout(&start).contains("# Memory: workspace demo"),
        "{start:?}"
    );
    let recall = installed(&merged, "UserPromptSubmit");
    let answered = sh(&recall, &prompt_input("Who runs our staging cluster?"));
    assert!(
        stdout(&answered).contains("Ana María / infra"),
        "{answered:?}"
    );
    let unrelated = sh(&recall, &prompt_input("zxqv plorb wibble"));
    assert_eq!(stdout(&unrelated), "");
    let slash = sh(&recall, &prompt_input("/compact"));
    assert_eq!(stdout(&slash), "");

    // A server that is gone costs the prompt nothing: no output, status 0, a word on stderr.
    let gone = recall.replace(&server.base, "http://127.0.0.1:9");
    let failed = sh(&gone, &prompt_input("Who runs our staging cluster?"));
    assert_eq!(stdout(&failed), "");
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("memory left out"),
        "{failed:?}"
    );

    // A bad setting in the client's environment (clap's exit status 2 would block the
    // prompt) costs the prompt nothing either.
    let mut misconfigured = Command::new("sh");
    misconfigured
        .args(["-c", &recall])
        .current_dir(dir.path())
        .env("ENGRAM_SECRETS", "off");
    let misconfigured = run(
        &mut misconfigured,
        &prompt_input("Who runs our staging cluster?"),
    );
    assert_eq!(stdout(&misconfigured), "");
    let said = String::from_utf8_lossy(&misconfigured.stderr);
    assert!(
        said.contains("memory left out") && said.contains("secrets"),
        "{said}"
    );

    // A PostgreSQL URL with a password is not written into a settings file.
    let leaky = engram(
        &[
            "hooks",
            "claude-code",
            "--workspace",
            "demo",
            "--database-url",
            "postgres://engram:hunter2@db.example/engram",
            "--install",
            "--settings",
            settings,
        ],
        "",
    );
    assert!(!leaky.status.success());
    assert!(
        String::from_utf8_lossy(&leaky.stderr).contains("holds a password"),
        "{leaky:?}"
    );
    assert!(
        !std::fs::read_to_string(&settings_path)
            .unwrap()
            .contains("hunter2")
    );

    let removed = engram(
        &[
            "hooks",
            "claude-code",
            "--uninstall",
            "--settings",
            settings,
        ],
        "",
    );
    assert!(stdout(&removed).contains("took engram's hooks out"));
    let after: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    assert_eq!(after, before);
}

pub async fn import_refuses_or_redacts_a_secret_line_by_line(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.jsonl");
    let key = "ghp_Zk3WqT9vLm2XpR7sYc4NbH8dFa6JuE1oQiVg";
    let lines = [
        json!({"type": "entity", "name": "CI", "entityType": "service",
               "observations": ["runs on every push", format!("deploys with token {key}")]}),
        json!({"type": "entity", "name": "Bob", "entityType": "person", "observations": ["likes tea"]}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap();
    let database = server.database_url.as_str();

    let refused = engram(
        &[
            "import",
            path,
            "--workspace",
            "demo",
            "--database-url",
            database,
        ],
        "",
    );
    assert!(
        !refused.status.success(),
        "a refused line fails the import: {refused:?}"
    );
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(
        report.contains("line 1") && report.contains("github-token"),
        "{report}"
    );
    assert!(report.contains("observations[1].content"), "{report}");
    assert!(!report.contains(key), "{report}");
    let client = server.streamable_client("demo").await;
    let opened = ok(&client, "open_nodes", json!({"names": ["CI", "Bob"]})).await;
    assert_eq!(opened["not_found"], json!(["CI"]), "{opened}");

    let redacted = engram(
        &[
            "import",
            path,
            "--workspace",
            "demo",
            "--database-url",
            database,
            "--secrets",
            "redact",
        ],
        "",
    );
    assert!(redacted.status.success(), "{redacted:?}");
    let opened = ok(&client, "open_nodes", json!({"names": ["CI"]})).await;
    assert_eq!(
        opened["entities"][0]["observations"][1]["content"],
        "deploys with token [redacted: github-token]"
    );
}

pub async fn recall_and_brief_send_a_token_to_a_server_that_requires_one(backend: Backend) {
    let server = TestServer::start_requiring_tokens(backend, &["demo"]).await;
    let token = crate::auth::create_token(
        &server.database_url,
        &["--workspace", "demo", "--read-only"],
    );
    let url = server.base.as_str();
    let refused = engram(&["brief", "--workspace", "demo", "--url", url], "");
    assert!(!refused.status.success(), "{refused:?}");
    let brief = engram(
        &[
            "brief",
            "--workspace",
            "demo",
            "--url",
            url,
            "--token",
            &token,
        ],
        "",
    );
    assert!(
        stdout(&brief).starts_with("# Memory: workspace demo\nEmpty so far."),
        "{brief:?}"
    );
    let recall = engram(
        &[
            "recall",
            "anything",
            "--workspace",
            "demo",
            "--url",
            url,
            "--token",
            &token,
        ],
        "",
    );
    assert_eq!(stdout(&recall), "");
}

/// `engram` with `args` on the SQLite file `url`, its standard streams piped.
fn spawn_hook(args: &[&str], url: &str) -> std::process::Child {
    spawn(
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(args)
            .args(["--database-url", url]),
    )
}

/// A hook whose client keeps standard input open (or trickles it) still ends within its
/// `--timeout`, with status 0 and a line saying why; an input past `MAX_HOOK_INPUT` is not
/// read into memory whole.
#[test]
fn a_hook_ends_within_its_timeout_whatever_its_input_does() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("engram.db").display().to_string();
    let created = engram(&["workspace", "create", "hw", "--database-url", &url], "");
    assert!(created.status.success(), "{created:?}");
    let hook = ["recall", "--hook", "--workspace", "hw", "--timeout", "2s"];
    let mut child = spawn_hook(&hook, &url);
    // The prompt arrives, and the pipe stays open.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(prompt_input("Alice").as_bytes()).unwrap();
    let started = std::time::Instant::now();
    let deadline = started + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the hook still runs with its standard input open"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(stdin);
    assert!(status.success(), "{status:?}");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--timeout"), "{stderr}");

    let mut child = spawn_hook(&hook, &url);
    let mut stdin = child.stdin.take().unwrap();
    // The hook stops reading at its bound: the rest meets a closed pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&vec![b'x'; 3 * 1024 * 1024]);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("larger than 1048576 bytes"), "{stderr}");
}

/// A hook (and `recall`) against a server that is not running: status 0 for the hook, and
/// one plain line on standard error that says so, without the MCP client's internals.
#[test]
fn a_server_that_is_down_is_one_plain_line() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["recall", "--hook", "--workspace", "demo", "--url", &url])
        .env_remove("ENGRAM_LOG")
        .env_remove("RUST_LOG")
        .env("ENGRAM_EMBEDDER", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(prompt_input("billing").as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        })
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("no engram server answers at"), "{stderr}");
    assert!(lines[0].contains("engram serve"), "{stderr}");
    assert!(!stderr.contains("rmcp"), "{stderr}");
}

/// `engram recall --url https://…` reaches a server behind TLS (a team server behind a
/// proxy): here a TLS proxy the test runs in front of the server, with a certificate authority
/// and certificate it makes with `openssl`, trusted through `SSL_CERT_FILE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_reaches_a_server_behind_tls() {
    use rustls::pki_types::pem::PemObject as _;
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).display().to_string();
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl").args(args).output();
        assert!(
            output.as_ref().is_ok_and(|o| o.status.success()),
            "openssl {args:?}: {output:?} (`cargo xtask test` installs it)"
        );
    };
    let (ca_key, ca, key, request, cert, ext) = (
        at("ca.key"),
        at("ca.pem"),
        at("server.key"),
        at("server.csr"),
        at("server.pem"),
        at("server.ext"),
    );
    for private in [&ca_key, &key] {
        openssl(&[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            private,
        ]);
    }
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        &ca_key,
        "-days",
        "1",
        "-subj",
        "/CN=engram test CA",
        "-out",
        &ca,
    ]);
    openssl(&[
        "req",
        "-new",
        "-key",
        &key,
        "-subj",
        "/CN=localhost",
        "-out",
        &request,
    ]);
    std::fs::write(
        &ext,
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        &request,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        &ext,
        "-out",
        &cert,
    ]);

    let server = TestServer::start(Backend::Sqlite, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entity_type": "person",
                             "observations": ["Alice leads the billing team"]}]}),
    )
    .await;
    // The TLS proxy: decrypts and forwards each connection to the server.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(&cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let private = rustls::pki_types::PrivateKeyDer::from_pem_file(&key).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = server.base.trim_start_matches("http://").to_owned();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let mut plain = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });

    let url = format!("https://localhost:{port}");
    let recalled = tokio::task::spawn_blocking(move || {
        run(
            Command::new(env!("CARGO_BIN_EXE_engram"))
                .args([
                    "recall",
                    "billing team",
                    "--workspace",
                    "demo",
                    "--url",
                    &url,
                ])
                .env("SSL_CERT_FILE", &ca),
            "",
        )
    })
    .await
    .unwrap();
    assert!(stdout(&recalled).contains("Alice"), "{recalled:?}");
    client.cancel().await.unwrap();
}
