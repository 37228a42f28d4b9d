//! `engram import` and `engram export` as a user runs them, against a server's store: the
//! reference memory server's file (with a malformed line, a dangling relation, a duplicate,
//! and relations before their nodes), a second run, a dry run, standard input, and an
//! export imported into an empty workspace, memory over time included.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::json;

use crate::scenario::ok;
use crate::server::{Backend, TestServer};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/e2e/fixtures/reference-memory.jsonl"
);

fn engram(database_url: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .env("ENGRAM_DATABASE_URL", database_url)
        .env("ENGRAM_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running engram");
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The report's row for `what`: `[imported, already present, rejected]`.
fn row(report: &str, what: &str) -> Vec<u64> {
    let line = (report.lines())
        .find(|l| l.starts_with(what))
        .unwrap_or_else(|| panic!("no {what} row in {report}"));
    line.split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect()
}

pub async fn the_reference_servers_file_imports_once_and_reports_what_it_refused(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let url = &server.database_url;

    let dry = engram(
        url,
        &["import", FIXTURE, "--workspace", "demo", "--dry-run"],
        None,
    );
    let report = stdout(&dry);
    assert_eq!(dry.status.code(), Some(1), "{dry:?}");
    assert!(
        report.starts_with("checked (dry run: nothing written)"),
        "{report}"
    );
    assert_eq!(row(&report, "entities"), [3, 1]);
    assert_eq!(row(&report, "relations"), [3, 1]);
    let client = server.streamable_client("demo").await;
    let stats = ok(&client, "get_stats", json!({})).await;
    assert_eq!(stats["node_count"], 0, "a dry run writes nothing: {stats}");

    let first = engram(url, &["import", FIXTURE, "--workspace", "demo"], None);
    let report = stdout(&first);
    assert_eq!(first.status.code(), Some(1), "{first:?}");
    assert_eq!(row(&report, "entities"), [3, 0, 1], "{report}");
    assert_eq!(row(&report, "observations"), [4, 1, 0], "{report}");
    assert_eq!(row(&report, "relations"), [2, 1, 1], "{report}");
    assert!(report.contains("line 4: not JSON"), "{report}");
    assert!(
        report.contains(
            "line 5: relation John_Smith -knows-> Nobody: no node \"Nobody\" in the file or the workspace"
        ),
        "{report}"
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains(
            "2 line(s) were not imported (listed above); wrote 3 entities, 4 observations and \
             2 relations; the rest was already there"
        ),
        "{stderr}"
    );

    let john = ok(&client, "open_nodes", json!({"names": ["John_Smith"]})).await;
    let contents: Vec<&str> = (john["entities"][0]["observations"]
        .as_array()
        .unwrap()
        .iter())
    .map(|o| o["content"].as_str().unwrap())
    .collect();
    assert_eq!(
        contents,
        [
            "Speaks fluent Spanish",
            "Graduated in 2019",
            "Prefers morning meetings"
        ]
    );
    assert_eq!(john["relations"].as_array().unwrap().len(), 1, "{john}");

    let second = engram(url, &["import", FIXTURE, "--workspace", "demo"], None);
    let report = stdout(&second);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("nothing was written: everything else was already there"),
        "the closing line says nothing was written: {stderr}"
    );
    assert_eq!(row(&report, "entities"), [0, 3, 1], "{report}");
    assert_eq!(row(&report, "observations"), [0, 5, 0], "{report}");
    assert_eq!(row(&report, "relations"), [0, 3, 1], "{report}");
    let stats = ok(&client, "get_stats", json!({})).await;
    assert_eq!(
        (
            &stats["node_count"],
            &stats["observation_count"],
            &stats["relation_count"]
        ),
        (&json!(3), &json!(4), &json!(2)),
        "{stats}"
    );

    let missing = engram(url, &["import", FIXTURE, "--workspace", "elsewhere"], None);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("--create-workspace"),
        "{missing:?}"
    );
    client.cancel().await.unwrap();
}

pub async fn a_large_file_on_standard_input_waits_for_late_nodes(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let mut file = String::new();
    // Relations first, pointing at nodes that come batches later.
    for i in 0..1_199 {
        let line = json!({"type": "relation", "from": format!("n{i:04}"), "to": format!("n{:04}", i + 1), "relationType": "next"});
        file.push_str(&format!("{line}\n"));
    }
    for i in 0..1_200 {
        let line = json!({"type": "entity", "name": format!("n{i:04}"), "entityType": "item", "observations": [format!("item {i}"), "shared text"]});
        file.push_str(&format!("{line}\n"));
    }
    let output = engram(
        &server.database_url,
        &["import", "-", "--workspace", "fresh", "--create-workspace"],
        Some(file.as_bytes()),
    );
    assert!(output.status.success(), "{output:?}");
    let report = stdout(&output);
    assert_eq!(row(&report, "entities"), [1_200, 0, 0], "{report}");
    assert_eq!(row(&report, "observations"), [2_400, 0, 0], "{report}");
    assert_eq!(row(&report, "relations"), [1_199, 0, 0], "{report}");
}

pub async fn an_export_imports_into_an_empty_workspace_unchanged(backend: Backend) {
    let server = TestServer::start(backend, &["source", "copy"]).await;
    let url = &server.database_url;
    let client = server.streamable_client("source").await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entity_type": "person", "observations": ["one", "two", "three"],
             "summary": "A person.", "tags": ["team", "core"]},
            {"name": "Bob", "entity_type": "person", "observations": ["hi \"there\"\nnew line"]},
            {"name": "engram", "entity_type": "project"},
        ]}),
    )
    .await;
    ok(
        &client,
        "delete_observations",
        json!({"deletions": [{"entity_name": "Alice", "ordinals": [2]}]}),
    )
    .await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "engram", "relation_type": "works_on"},
                             {"from_entity": "Bob", "to_entity": "Alice", "relation_type": "knows"}]}),
    )
    .await;
    for target in [
        json!({"node": "Alice"}),
        json!({"relation": {"from": "Bob", "to": "Alice", "relation_type": "knows"}}),
    ] {
        let reflection = json!({"target": target, "content": "worth keeping", "mood": "calm"});
        ok(&client, "add_reflection", reflection).await;
    }
    client.cancel().await.unwrap();

    // The reference server's format says what it cannot carry.
    let reference = engram(
        url,
        &["export", "--workspace", "source", "--format", "anthropic"],
        None,
    );
    assert!(reference.status.success(), "{reference:?}");
    let said = String::from_utf8_lossy(&reference.stderr);
    assert!(
        said.contains("1 summaries and the tags of 1 nodes were left out"),
        "{said}"
    );
    let exported = engram(url, &["export", "--workspace", "source"], None);
    assert!(exported.status.success(), "{exported:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("source.jsonl");
    std::fs::write(&file, &exported.stdout).unwrap();
    // A dry run into the workspace writes nothing, reflections included (the import below
    // finds none there).
    let dry = engram(
        url,
        &[
            "import",
            file.to_str().unwrap(),
            "--workspace",
            "copy",
            "--dry-run",
        ],
        None,
    );
    assert!(dry.status.success(), "{dry:?}");
    let imported = engram(
        url,
        &["import", file.to_str().unwrap(), "--workspace", "copy"],
        None,
    );
    assert!(imported.status.success(), "{imported:?}");
    let table = stdout(&imported);
    assert!(
        (table.lines())
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["reflections", "2", "0", "0"]),
        "{table}"
    );
    let again = engram(
        url,
        &[
            "export",
            "--workspace",
            "copy",
            "--output",
            dir.path().join("copy.jsonl").to_str().unwrap(),
        ],
        None,
    );
    assert!(again.status.success(), "{again:?}");
    let copy = std::fs::read_to_string(dir.path().join("copy.jsonl")).unwrap();
    let source = String::from_utf8(exported.stdout).unwrap();
    // Everything but the header (workspace name, export time) is the same, byte for byte.
    let body = |text: &str| text.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&copy), body(&source));
    assert_eq!(body(&source).len(), 7, "{source}");
    let reflection: serde_json::Value =
        serde_json::from_str(source.lines().last().unwrap()).unwrap();
    assert_eq!(reflection["type"], "reflection", "{source}");
    assert_eq!(
        reflection["target"],
        json!({"relation": {"from": "Bob", "to": "Alice", "relation_type": "knows"}})
    );
    assert_eq!(
        (&reflection["content"], &reflection["mood"]),
        (&json!("worth keeping"), &json!("calm"))
    );
    assert!(
        source
            .lines()
            .nth(1)
            .unwrap()
            .contains("\"next_ordinal\":4"),
        "{source}"
    );

    let anthropic = engram(
        url,
        &["export", "--workspace", "copy", "--format", "anthropic"],
        None,
    );
    let lines: Vec<serde_json::Value> = (stdout(&anthropic).lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        json!({"type": "entity", "name": "Alice", "entityType": "person", "observations": ["one", "three"]})
    );
    assert_eq!(
        lines[3],
        json!({"type": "relation", "from": "Alice", "to": "engram", "relationType": "works_on"})
    );

    let around = engram(
        url,
        &[
            "export",
            "--workspace",
            "copy",
            "--format",
            "mermaid",
            "--around",
            "engram",
            "--depth",
            "1",
        ],
        None,
    );
    let drawing = stdout(&around);
    assert!(drawing.starts_with("flowchart LR\n"), "{around:?}");
    assert!(
        drawing.contains("Alice") && drawing.contains("works_on") && !drawing.contains("Bob"),
        "{drawing}"
    );
    let dot = engram(
        url,
        &["export", "--workspace", "copy", "--format", "dot"],
        None,
    );
    assert!(
        stdout(&dot).contains("\"Bob\" -> \"Alice\" [label=\"knows\"];"),
        "{dot:?}"
    );
    let refused = engram(
        url,
        &["export", "--workspace", "copy", "--around", "Bob"],
        None,
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--format mermaid or dot"),
        "{refused:?}"
    );
}

/// Memory over time survives `engram export` and `engram import`: a fact held since before it
/// was written, an ended fact, an expiring one, an ended relation and an alias read the same in
/// the copy (now, with `include_ended`, `as_of` a past time, by the alias), the copy exports
/// byte for byte as the source did, and an alias another node holds is refused with its line.
pub async fn an_export_keeps_ended_facts_expiries_and_aliases(backend: Backend) {
    let server = TestServer::start(backend, &["source", "copy"]).await;
    let url = &server.database_url;
    let client = server.streamable_client("source").await;
    let now = chrono::Utc::now();
    let days_ago = |days: i64| (now - chrono::Duration::days(days)).to_rfc3339();
    ok(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entity_type": "person", "observations": [
                {"content": "lives in Lisbon", "valid_from": days_ago(40)},
                {"content": "likes tea", "valid_from": days_ago(30)},
                {"content": "is on call this week",
                 "expires_at": (now + chrono::Duration::days(3)).to_rfc3339()},
            ]},
            {"name": "Acme", "entity_type": "company"},
        ]}),
    )
    .await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "Acme",
                              "relation_type": "works_at", "valid_from": days_ago(40)}]}),
    )
    .await;
    ok(
        &client,
        "end_observations",
        json!({"endings": [{"entity_name": "Alice", "ordinals": [1]}], "ended_at": days_ago(10)}),
    )
    .await;
    ok(
        &client,
        "end_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "Acme", "relation_type": "works_at"}],
               "ended_at": days_ago(5)}),
    )
    .await;
    ok(
        &client,
        "set_aliases",
        json!({"name": "Alice", "aliases": ["Ally"]}),
    )
    .await;

    let exported = engram(url, &["export", "--workspace", "source"], None);
    assert!(exported.status.success(), "{exported:?}");
    let source = String::from_utf8(exported.stdout).unwrap();
    let alice: serde_json::Value = serde_json::from_str(source.lines().nth(2).unwrap()).unwrap();
    assert_eq!(alice["aliases"], json!(["Ally"]), "{alice}");
    let facts = alice["observations"].as_array().unwrap();
    assert_eq!(facts.len(), 3, "the ended fact too: {alice}");
    assert!(facts[0]["valid_to"].is_string(), "{alice}");
    assert!(facts[2]["expires_at"].is_string(), "{alice}");
    assert_eq!(facts[1]["author"], "local", "{alice}");
    let relation: serde_json::Value = serde_json::from_str(source.lines().nth(3).unwrap()).unwrap();
    assert!(
        relation["valid_to"].is_string(),
        "the ended relation: {relation}"
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("source.jsonl");
    std::fs::write(&file, &source).unwrap();
    let file = file.to_str().unwrap();
    let imported = engram(url, &["import", file, "--workspace", "copy"], None);
    assert!(imported.status.success(), "{imported:?}");
    let report = stdout(&imported);
    assert_eq!(row(&report, "observations"), [3, 0, 0], "{report}");
    assert_eq!(row(&report, "relations"), [1, 0, 0], "{report}");
    assert_eq!(row(&report, "aliases"), [1, 0, 0], "{report}");
    let copy = engram(url, &["export", "--workspace", "copy"], None);
    let body = |text: &str| text.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&stdout(&copy)), body(&source));

    let copied = server.streamable_client("copy").await;
    for arguments in [
        json!({"names": ["Alice", "Acme"]}),
        json!({"names": ["Alice", "Acme"], "include_ended": true}),
        json!({"names": ["Alice", "Acme"], "as_of": days_ago(20)}),
        json!({"names": ["Ally"]}),
    ] {
        let original = ok(&client, "open_nodes", arguments.clone()).await;
        let imported = ok(&copied, "open_nodes", arguments.clone()).await;
        assert_eq!(imported, original, "{arguments}");
    }
    let then = ok(
        &copied,
        "open_nodes",
        json!({"names": ["Alice"], "as_of": days_ago(20)}),
    )
    .await;
    assert_eq!(
        then["entities"][0]["observations"][0]["content"],
        "lives in Lisbon"
    );
    assert_eq!(then["relations"][0]["relation_type"], "works_at", "{then}");

    // An alias that is another node's name in the workspace is refused with its line; the
    // rest of the line is imported.
    let clash = dir.path().join("clash.jsonl");
    std::fs::write(
        &clash,
        "{\"type\":\"node\",\"name\":\"Bob\",\"entity_type\":\"person\",\
         \"aliases\":[\"Acme\"],\"observations\":[{\"content\":\"knows Alice\"}]}\n",
    )
    .unwrap();
    let refused = engram(
        url,
        &["import", clash.to_str().unwrap(), "--workspace", "copy"],
        None,
    );
    let report = stdout(&refused);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert_eq!(row(&report, "entities"), [1, 0, 0], "{report}");
    assert_eq!(row(&report, "aliases"), [0, 0, 1], "{report}");
    assert!(
        report.contains("line 1: alias \"Acme\" of Bob not set: it is another node's name"),
        "{report}"
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "1 alias was not set (listed above); wrote 1 entity, 1 observation and 0 relations"
        ),
        "{stderr}"
    );
    client.cancel().await.unwrap();
    copied.cancel().await.unwrap();
}

/// A file with a byte-order mark, a line that is not UTF-8 and one longer than a line may be:
/// every good line is imported, each bad one is refused with its number, the table printed.
pub async fn bad_bytes_and_long_lines_never_stop_an_import(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let url = &server.database_url;
    let mut file = b"\xef\xbb\xbf".to_vec();
    file.extend_from_slice(
        br#"{"type":"entity","name":"Alice","entityType":"person","observations":["lives in Lisbon"]}"#,
    );
    file.extend_from_slice(
        b"\n{\"type\":\"entity\",\"name\":\"Bro\xffken\",\"entityType\":\"x\"}\n",
    );
    file.extend_from_slice(br#"{"type":"entity","name":"Huge","entityType":"x","observations":[""#);
    file.resize(file.len() + 17 * 1024 * 1024, b'a');
    file.extend_from_slice(b"\"]}\n");
    file.extend_from_slice(
        br#"{"type":"entity","name":"Bob","entityType":"person","observations":["knows Alice"]}"#,
    );
    file.extend_from_slice(b"\n");
    file.extend_from_slice(
        br#"{"type":"relation","from":"Bob","to":"Alice","relationType":"knows"}"#,
    );
    let imported = engram(
        url,
        &["import", "-", "--workspace", "demo"],
        Some(file.as_slice()),
    );
    let report = stdout(&imported);
    assert_eq!(imported.status.code(), Some(1), "{imported:?}");
    assert_eq!(row(&report, "entities"), [2, 0, 0], "{report}");
    assert_eq!(row(&report, "relations"), [1, 0, 0], "{report}");
    assert!(
        report.contains("line 2: not UTF-8 text (an invalid byte at offset 28)"),
        "{report}"
    );
    assert!(report.contains("line 3: a line of 1"), "{report}");
    assert!(report.contains("longer than the 16 MiB"), "{report}");
    let client = server.streamable_client("demo").await;
    let opened = ok(&client, "open_nodes", json!({"names": ["Alice", "Bob"]})).await;
    assert_eq!(opened["entities"].as_array().unwrap().len(), 2, "{opened}");
    assert_eq!(opened["relations"][0]["relation_type"], "knows");
    client.cancel().await.unwrap();
}

/// `--create-missing-nodes` keeps a relation to a node no line provides, as the reference
/// server did, by making that node (type `unknown`); the table names it.
pub async fn missing_endpoints_become_nodes_when_asked(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let url = &server.database_url;
    let args = [
        "import",
        FIXTURE,
        "--workspace",
        "demo",
        "--create-missing-nodes",
    ];
    let dry = engram(url, &[&args[..], &["--dry-run"]].concat(), None);
    let report = stdout(&dry);
    assert_eq!(row(&report, "entities"), [4, 1], "{report}");
    assert_eq!(row(&report, "relations"), [4, 0], "{report}");
    assert!(
        report.contains("1 node(s) of type unknown would be made for relations whose endpoint the file did not hold: Nobody"),
        "{report}"
    );

    let output = engram(url, &args, None);
    let report = stdout(&output);
    // The malformed line is still refused (exit 1); the dangling relation is not.
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(row(&report, "entities"), [4, 0, 1], "{report}");
    assert_eq!(row(&report, "relations"), [3, 1, 0], "{report}");
    assert!(
        report.contains("1 node(s) of type unknown made for relations whose endpoint the file did not hold: Nobody"),
        "{report}"
    );
    assert!(!report.contains("line 5:"), "{report}");
    let client = server.streamable_client("demo").await;
    let nobody = ok(&client, "open_nodes", json!({"names": ["Nobody"]})).await;
    assert_eq!(nobody["entities"][0]["entity_type"], "unknown", "{nobody}");
    let john = ok(&client, "open_nodes", json!({"names": ["John_Smith"]})).await;
    assert_eq!(john["relations"].as_array().unwrap().len(), 2, "{john}");
    client.cancel().await.unwrap();
}

/// A dry run into a workspace, or a database, that does not exist yet checks every line
/// against an empty one and creates nothing: no workspace, no file.
pub async fn a_dry_run_creates_nothing_anywhere(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let dry = engram(
        &server.database_url,
        &["import", FIXTURE, "--workspace", "later", "--dry-run"],
        None,
    );
    let report = stdout(&dry);
    assert!(
        report.starts_with("checked (dry run: nothing written)") && report.contains("later (new)"),
        "{report}"
    );
    assert_eq!(row(&report, "entities"), [3, 1], "{report}");
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert!(
        stderr.contains("dry run: nothing was written; valid: 3 entities, 5 observations and 3 relations; 2 line(s) would be refused")
            && stderr.contains("the import needs --create-workspace"),
        "{stderr}"
    );
    let list = engram(&server.database_url, &["workspace", "list"], None);
    assert!(!stdout(&list).contains("later"), "{}", stdout(&list));

    // No database at all: the file is not created.
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("fresh.db");
    let url = format!("sqlite://{}", file.display());
    let dry = engram(
        &url,
        &[
            "import",
            FIXTURE,
            "--workspace",
            "w",
            "--create-workspace",
            "--dry-run",
        ],
        None,
    );
    assert_eq!(row(&stdout(&dry), "relations"), [3, 1], "{dry:?}");
    let created: Vec<_> = std::fs::read_dir(directory.path()).unwrap().collect();
    assert!(created.is_empty(), "a dry run created {created:?}");
}

/// SIGINT stops an import after the batch being written: the table so far, the line to
/// resume from, status 130; running the same command again completes it.
pub async fn an_interrupted_import_says_where_to_resume(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let line = |i: usize| {
        let node = json!({"type": "entity", "name": format!("n{i:05}"), "entityType": "item",
                          "observations": [format!("item number {i}")]});
        format!("{node}\n")
    };
    let (first, total) = (3_000, 6_000);
    let whole: String = (0..total).map(line).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["import", "-", "--workspace", "demo"])
        .env("ENGRAM_DATABASE_URL", &server.database_url)
        .env("ENGRAM_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all((0..first).map(line).collect::<String>().as_bytes())
        .unwrap();
    input.flush().unwrap();
    // Wait for the first batches to land, then interrupt while the file is still open.
    let client = server.streamable_client("demo").await;
    let started = std::time::Instant::now();
    loop {
        let stats = ok(&client, "get_stats", json!({})).await;
        if stats["node_count"].as_u64().unwrap() >= 500 {
            break;
        }
        assert!(
            started.elapsed().as_secs() < 60,
            "no batch written: {stats}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // The next line read sees the signal; a closed pipe is fine too.
    let _ = input.write_all((first..total).map(line).collect::<String>().as_bytes());
    drop(input);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    let report = stdout(&output);
    let imported = row(&report, "entities")[0];
    assert!(imported >= 500 && imported < total as u64, "{report}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("interrupted at line") && stderr.contains("Run the same command again"),
        "{stderr}"
    );
    let stats = ok(&client, "get_stats", json!({})).await;
    assert_eq!(
        stats["node_count"].as_u64(),
        Some(imported),
        "the table says what is in: {stats}"
    );

    let again = engram(
        &server.database_url,
        &["import", "-", "--workspace", "demo"],
        Some(whole.as_bytes()),
    );
    assert!(again.status.success(), "{again:?}");
    assert_eq!(
        row(&stdout(&again), "entities"),
        [total as u64 - imported, imported, 0]
    );
    client.cancel().await.unwrap();
}

/// The closing line counts in words a person reads ("1 entity"), says "everything" when nothing
/// was refused, and an unknown workspace is named before the fix.
#[test]
fn an_import_says_what_it_did_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("engram.db").display().to_string();
    let file = dir.path().join("one.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"entity\",\"name\":\"Solo\",\"entityType\":\"thing\",\
         \"observations\":[\"the only fact\"]}\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let missing = engram(&url, &["import", &file, "--workspace", "nosuch"], None);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    let (cause, fix) = (
        stderr.find("nosuch").unwrap(),
        stderr.find("add --create-workspace").unwrap(),
    );
    assert!(cause < fix, "the cause comes first: {stderr}");
    let first = engram(
        &url,
        &["import", &file, "--workspace", "solo", "--create-workspace"],
        None,
    );
    let said = format!(
        "{}{}",
        stdout(&first),
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        said.contains("wrote 1 entity, 1 observation and 0 relations"),
        "{said}"
    );
    let again = engram(&url, &["import", &file, "--workspace", "solo"], None);
    let said = format!(
        "{}{}",
        stdout(&again),
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        said.contains("nothing was written: everything was already there"),
        "{said}"
    );
}
