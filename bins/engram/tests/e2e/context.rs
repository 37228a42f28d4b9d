//! Memory agents use without being told: MCP prompts and resources over every transport,
//! resource links from search, secrets refused over MCP, and `engram recall`, `engram brief`
//! and `engram hooks claude-code` run as a person (and as Claude Code) runs them.

use std::process::{Command, Output, Stdio};

use rmcp::model::{
    GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams, ResourceContents,
};
use serde_json::{Value, json};

use crate::scenario::{call, ok};
use crate::server::{Backend, Client, TestServer};

/// A small memory: a project, two people, relations, a summary.
async fn remember(client: &Client) {
    ok(
        client,
        "create_entities",
        json!({"entities": [
            {"name": "engram", "entity_type": "project",
             "observations": ["engram is a memory server written in Rust",
                              "engram stores a knowledge graph in PostgreSQL or SQLite"]},
            {"name": "Ana María / infra", "entity_type": "person",
             "observations": ["Ana María runs the staging cluster in Lisbon"]},
            {"name": "Bob", "entity_type": "person",
             "observations": ["Bob prefers tabs over spaces"]},
        ]}),
    )
    .await;
    ok(
        client,
        "create_relations",
        json!({"relations": [
            {"from_entity": "Ana María / infra", "to_entity": "engram", "relation_type": "operates"},
            {"from_entity": "Bob", "to_entity": "engram", "relation_type": "works_on"},
        ]}),
    )
    .await;
    ok(
        client,
        "set_summary",
        json!({"name": "engram", "summary": "The memory server for AI agents."}),
    )
    .await;
    // Searches below rank with every vector in place.
    for _ in 0..600 {
        let stats = ok(client, "get_stats", json!({})).await;
        if stats["embedding_coverage"].as_f64() == Some(1.0) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the indexer did not finish");
}

/// The text of a resource read.
fn resource_text(contents: &[ResourceContents]) -> String {
    match &contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

/// The text of a prompt's first message.
fn prompt_text(prompt: &rmcp::model::GetPromptResult) -> String {
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert_eq!(message["role"], "user");
    message["content"]["text"].as_str().unwrap().to_owned()
}

/// `recall` with `topic`.
async fn recall_prompt(client: &Client, topic: &str) -> String {
    let mut arguments = serde_json::Map::new();
    arguments.insert("topic".into(), topic.into());
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("recall").with_arguments(arguments))
        .await
        .unwrap();
    prompt_text(&prompt)
}

/// What every transport must serve: the two prompts rendered from live data, the brief and a
/// node as resources, the node template.
pub async fn prompts_and_resources_answer(client: &Client) {
    remember(client).await;
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.prompts.is_some() && capabilities.resources.is_some());

    let prompts = client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["recall", "consolidate"]);
    let recalled = recall_prompt(client, "Who runs the staging cluster?").await;
    assert!(
        recalled.contains("- Ana María / infra [person] "),
        "{recalled}"
    );
    assert!(
        recalled.contains("runs the staging cluster in Lisbon"),
        "{recalled}"
    );
    let nothing = recall_prompt(client, "zxqv plorb wibble").await;
    assert_eq!(
        nothing,
        "Memory holds nothing relevant on \"zxqv plorb wibble\"."
    );
    let consolidate = client
        .get_prompt(GetPromptRequestParams::new("consolidate"))
        .await
        .unwrap();
    let consolidate = prompt_text(&consolidate);
    assert!(consolidate.contains("stale_summaries") && consolidate.contains("The report:"));
    assert!(consolidate.contains("\"orphaned_nodes\""), "{consolidate}");

    let brief = client
        .read_resource(ReadResourceRequestParams::new("engram://brief"))
        .await
        .unwrap();
    let brief = resource_text(&brief.contents);
    assert!(brief.starts_with("# Memory: workspace "), "{brief}");
    assert!(
        brief.contains("3 nodes, 4 observations, 2 relations."),
        "{brief}"
    );
    assert!(
        brief.contains(
            "## Most connected\n- engram [project], 2 related: The memory server for AI agents.\n"
        ),
        "{brief}"
    );
    let uri = "engram://node/Ana%20Mar%C3%ADa%20%2F%20infra";
    let node = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    assert_eq!(
        resource_text(&node.contents).lines().next(),
        Some("# Ana María / infra [person]")
    );
    assert!(resource_text(&node.contents).contains("1. Ana María runs the staging cluster"));
    assert!(resource_text(&node.contents).contains("- Ana María / infra -operates-> engram"));
    let missing = client
        .read_resource(ReadResourceRequestParams::new("engram://node/Nobody"))
        .await
        .unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("no node at engram://node/Nobody"),
        "{missing}"
    );

    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "engram://node/{name}");
}

pub async fn prompts_and_resources_over_streamable_http(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    prompts_and_resources_answer(&client).await;

    // Resources page through every node by name, the brief first.
    let nodes: Vec<Value> = (0..150)
        .map(|i| json!({"name": format!("topic {i:03}"), "entity_type": "topic", "observations": []}))
        .collect();
    ok(&client, "create_entities", json!({ "entities": nodes })).await;
    let first = client.list_resources(None).await.unwrap();
    assert_eq!(first.resources[0].uri, "engram://brief");
    assert_eq!(first.resources.len(), 101);
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = client
        .list_resources(Some(
            PaginatedRequestParams::default().with_cursor(Some(cursor)),
        ))
        .await
        .unwrap();
    assert_eq!(second.resources.len(), 53);
    assert_eq!(second.next_cursor, None);
    assert_eq!(second.resources[52].uri, "engram://node/topic%20149");

    // A search links every node it found.
    let found = call(
        &client,
        "search_nodes",
        json!({"query": "staging cluster Lisbon"}),
    )
    .await;
    let links: Vec<Value> = (serde_json::to_value(&found.content)
        .unwrap()
        .as_array()
        .unwrap())
    .iter()
    .filter(|block| block["type"] == "resource_link")
    .cloned()
    .collect();
    assert_eq!(
        links[0]["uri"], "engram://node/Ana%20Mar%C3%ADa%20%2F%20infra",
        "{links:?}"
    );
    assert_eq!(links[0]["name"], "Ana María / infra");

    // A credential is refused as a tool error naming the field and the kind, not the value.
    let key = "AKIAZ7QW4RTY2UIOPL3M";
    let refused = call(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Bob", "contents": [format!("the staging key is {key}")]}]}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    let message = serde_json::to_string(&refused.content).unwrap();
    assert!(
        message.contains("observations[0].contents[0]") && message.contains("aws-access-key"),
        "{message}"
    );
    assert!(!message.contains(key), "{message}");
}

pub async fn prompts_and_resources_over_legacy_sse(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = crate::sse_client::connect(&server.base, "demo").await;
    prompts_and_resources_answer(&client).await;
}

pub async fn prompts_and_resources_over_stdio(backend: Backend) {
    use rmcp::ServiceExt;
    let server = TestServer::start(backend, &["demo"]).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    command
        .args(["serve", "--stdio", "--workspace", "demo", "--database-url"])
        .arg(&server.database_url)
        .env("ENGRAM_LOG", "warn");
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.unwrap();
    prompts_and_resources_answer(&client).await;
}

/// `engram` as typed, with `stdin` on its standard input.
fn engram(args: &[&str], stdin: &str) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_engram")).args(args), stdin)
}

fn run(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = command
        .env_remove("ENGRAM_DATABASE_URL")
        .env_remove("ENGRAM_URL")
        .env_remove("ENGRAM_TOKEN")
        .env("ENGRAM_LOG", "warn")
        .env("ENGRAM_EMBEDDER", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running engram");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
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
            recalled.contains("- Ana María / infra [person] "),
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

    let removed = engram(
        &[
            "hooks",
            "claude-code",
            "--workspace",
            "demo",
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
