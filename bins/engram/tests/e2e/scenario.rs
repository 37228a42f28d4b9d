//! One walk through every tool, checking each effect through another tool; run over every
//! transport.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::server::{Backend, Client, TestServer};
use crate::sse_client;

/// Calls `tool` and returns the raw result.
pub async fn call(
    client: &Client,
    tool: &'static str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let arguments = arguments
        .as_object()
        .cloned()
        .expect("arguments are an object");
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Calls `tool`, expects success, and returns its structured result.
pub async fn ok(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert_ne!(result.is_error, Some(true), "{tool} failed: {result:?}");
    let structured = result
        .structured_content
        .unwrap_or_else(|| panic!("{tool}: no structured content"));
    // The text twin is the same JSON, and both match the published output schema.
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
    assert_eq!(
        serde_json::from_str::<Value>(text.as_str().unwrap()).unwrap(),
        structured,
        "{tool}: the text twin differs"
    );
    let schema = output_schema(client, tool).await;
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    if let Err(error) = validator.validate(&structured) {
        panic!("{tool}: the result does not match its output schema: {error}\n{structured}");
    }
    structured
}

/// `rows`, a list of facts, without the `valid_from` each must carry: a day, `"2026-03-02"`,
/// or an instant to the second, `"2026-03-02T09:14:05Z"`.
pub fn undated(rows: &Value) -> Value {
    let rows = rows
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {rows}"));
    (rows.iter())
        .map(|row| {
            let mut row = row.clone();
            let from = row.as_object_mut().and_then(|o| o.remove("valid_from"));
            let from = (from.as_ref().and_then(Value::as_str))
                .unwrap_or_else(|| panic!("a fact without valid_from: {row}"));
            let day = from.len() == 10;
            let second = from.len() == 20 && from.ends_with('Z');
            assert!(day || second, "valid_from {from:?}");
            row
        })
        .collect()
}

/// `tool`'s output schema as `tools/list` publishes it (read once per test process).
async fn output_schema(client: &Client, tool: &str) -> Value {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static SCHEMAS: Mutex<Option<HashMap<String, Value>>> = Mutex::new(None);
    if let Some(schema) = (SCHEMAS.lock().unwrap().as_ref()).and_then(|s| s.get(tool)) {
        return schema.clone();
    }
    let tools = client.list_all_tools().await.unwrap();
    let mut schemas = SCHEMAS.lock().unwrap();
    let schemas = schemas.get_or_insert_with(HashMap::new);
    for listed in tools {
        if let Some(output) = listed.output_schema {
            schemas.insert(listed.name.to_string(), Value::Object((*output).clone()));
        }
    }
    schemas
        .get(tool)
        .cloned()
        .unwrap_or_else(|| panic!("{tool} has no output schema"))
}

/// Calls `tool`, expects a tool error (`isError: true`), and returns its text.
pub async fn tool_error(client: &Client, tool: &'static str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} should fail: {result:?}"
    );
    let text = serde_json::to_value(&result.content).unwrap();
    text[0]["text"].as_str().unwrap().to_owned()
}

pub fn names(values: &Value) -> Vec<&str> {
    values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect()
}

/// Checks the server is engram, runs every tool once (each effect checked through another
/// tool), and disconnects.
pub async fn exercise_every_tool_and_close(client: Client) {
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "engram");
    exercise_every_tool(&client).await;
    client.cancel().await.unwrap();
}

/// Every tool once, its effect checked through another tool.
pub async fn exercise_every_tool(client: &Client) {
    let created = ok(
        client,
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entity_type": "person",
             "observations": ["moved to Lisbon in March", "works on engram"], "tags": ["team"]},
            {"name": "Bob", "entity_type": "person"},
            {"name": "engram", "entity_type": "project", "summary": "a memory server"},
        ]}),
    )
    .await;
    assert_eq!(names(&created["entities"]), ["Alice", "Bob", "engram"]);
    let again = ok(
        client,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entity_type": "robot"}]}),
    )
    .await;
    assert_eq!(again["entities"][0]["already_existed"], true);
    assert_eq!(again["entities"][0]["entity_type"], "person");

    let added = ok(
        client,
        "add_observations",
        json!({"observations": [{"entity_name": "Alice", "contents": ["likes tea"]}]}),
    )
    .await;
    assert_eq!(
        added["results"][0]["added"],
        json!([{"ordinal": 3, "content": "likes tea"}])
    );
    let replaced = ok(
        client,
        "replace_observation",
        json!({"entity_name": "Alice", "ordinal": 1, "new_content": "lives in Lisbon"}),
    )
    .await;
    assert_eq!(replaced["old_content"], "moved to Lisbon in March");
    let deleted = ok(
        client,
        "delete_observations",
        json!({"deletions": [{"entity_name": "Alice", "ordinals": [2, 9]}]}),
    )
    .await;
    assert_eq!(deleted["results"][0]["deleted_ordinals"], json!([2]));
    assert_eq!(deleted["results"][0]["not_found_ordinals"], json!([9]));
    ok(
        client,
        "set_tags",
        json!({"name": "Alice", "tags": ["team", "lisbon"]}),
    )
    .await;
    ok(
        client,
        "set_summary",
        json!({"name": "Alice", "summary": "engineer in Lisbon"}),
    )
    .await;

    let opened = ok(client, "open_nodes", json!({"names": ["Alice", "Nobody"]})).await;
    let alice = &opened["entities"][0];
    assert_eq!(
        undated(&alice["observations"]),
        json!([
            {"ordinal": 1, "content": "lives in Lisbon"},
            {"ordinal": 3, "content": "likes tea"},
        ])
    );
    assert_eq!(alice["tags"], json!(["team", "lisbon"]));
    assert_eq!(alice["summary"], "engineer in Lisbon");
    assert_eq!(opened["not_found"], json!(["Nobody"]));

    let people = ok(
        client,
        "get_nodes_by_type",
        json!({"entity_type": "person"}),
    )
    .await;
    assert_eq!(names(&people["nodes"]), ["Alice", "Bob"]);

    let relations = ok(
        client,
        "create_relations",
        json!({"relations": [
            {"from_entity": "Alice", "to_entity": "engram", "relation_type": "works_on"},
            {"from_entity": "Bob", "to_entity": "Alice", "relation_type": "knows"},
            {"from_entity": "Bob", "to_entity": "Ghost", "relation_type": "knows"},
        ]}),
    )
    .await;
    assert_eq!(relations["created"].as_array().unwrap().len(), 2);
    assert_eq!(relations["not_found"], json!(["Ghost"]));
    ok(client, "rename_relation_type", json!({"from_entity": "Bob", "to_entity": "Alice", "old_type": "knows", "new_type": "mentors"})).await;
    let between = ok(
        client,
        "get_relations_between",
        json!({"entity_a": "Alice", "entity_b": "Bob"}),
    )
    .await;
    assert_eq!(
        between["relations"],
        json!([{"from": "Bob", "to": "Alice", "relation_type": "mentors"}])
    );

    let neighborhood = ok(
        client,
        "get_neighborhood",
        json!({"name": "engram", "depth": 2}),
    )
    .await;
    assert_eq!(names(&neighborhood["nodes"]), ["engram", "Alice", "Bob"]);
    assert_eq!(neighborhood["relations"].as_array().unwrap().len(), 2);
    let path = ok(
        client,
        "get_path",
        json!({"from_entity": "engram", "to_entity": "Bob"}),
    )
    .await;
    assert_eq!(path["found"], true);
    assert_eq!(path["path"], json!(["engram", "Alice", "Bob"]));

    ok(
        client,
        "create_entities",
        json!({"entities": [
            {"name": "Carol", "entity_type": "person", "observations": ["reviews engram code"]},
        ]}),
    )
    .await;
    let orphans = ok(client, "get_orphaned_nodes", json!({})).await;
    assert_eq!(names(&orphans["nodes"]), ["Carol"]);
    let unlinked = ok(client, "find_unlinked_references", json!({})).await;
    assert_eq!(
        unlinked["references"],
        json!([{"node": "Carol", "referenced_name": "engram", "reference_count": 1}])
    );
    let pending = ok(client, "get_pending_consolidation", json!({})).await;
    assert_eq!(names(&pending["nodes"]), ["Carol"]);
    let report = ok(client, "get_consolidation_report", json!({"limit": 5})).await;
    assert_eq!(names(&report["stale_summaries"]), ["Carol"]);
    assert_eq!(
        report["stale_summaries"][0]["draft_summary"],
        "reviews engram code."
    );
    assert_eq!(names(&report["orphaned_nodes"]), ["Carol"]);
    assert!(
        report["event_summary"]["creates"].as_i64().unwrap() >= 8,
        "{report}"
    );
    let recent = ok(
        client,
        "get_recently_modified",
        json!({"days": 1, "limit": 2}),
    )
    .await;
    assert_eq!(recent["nodes"].as_array().unwrap().len(), 2);

    let stats = ok(client, "get_stats", json!({})).await;
    assert_eq!(
        (
            stats["node_count"].as_i64(),
            stats["observation_count"].as_i64(),
            stats["relation_count"].as_i64()
        ),
        (Some(4), Some(3), Some(2))
    );

    let removed = ok(client, "delete_relations", json!({"relations": [{"from_entity": "Alice", "to_entity": "engram", "relation_type": "works_on"}]})).await;
    assert_eq!(removed, json!({"deleted": 1, "not_found": 0}));
    let gone = ok(
        client,
        "delete_entities",
        json!({"entity_names": ["Carol", "Nobody"]}),
    )
    .await;
    assert_eq!(gone, json!({"deleted": ["Carol"], "not_found": ["Nobody"]}));
    assert_eq!(ok(client, "get_stats", json!({})).await["node_count"], 3);

    let found = ok(
        client,
        "search_nodes",
        json!({"query": "Lisbon", "mode": "text"}),
    )
    .await;
    assert_eq!(found["mode"], "text");
    assert_eq!(found["results"][0]["name"], "Alice");
    assert_eq!(
        found["results"][0]["matched_observation"],
        "lives in Lisbon"
    );
    assert_eq!(found["results"][0]["ordinal"], 1);
    let within = ok(
        client,
        "query_observations",
        json!({"entity_name": "Alice", "query": "tea", "mode": "text"}),
    )
    .await;
    assert_eq!(
        undated(&within["observations"]),
        json!([{"ordinal": 3, "content": "likes tea", "score": within["observations"][0]["score"]}])
    );
    let facts = ok(
        client,
        "search_observations",
        json!({"query": "Lisbon tea", "mode": "text", "entity_types": ["person"], "limit": 5}),
    )
    .await;
    assert_eq!(facts["mode"], "text");
    let contents: Vec<(&str, &str)> = (facts["observations"].as_array().unwrap().iter())
        .map(|o| (o["name"].as_str().unwrap(), o["content"].as_str().unwrap()))
        .collect();
    assert_eq!(contents.len(), 2, "{facts}");
    assert!(contents.contains(&("Alice", "lives in Lisbon")), "{facts}");
    assert!(contents.contains(&("Alice", "likes tea")), "{facts}");
    let bad_types = tool_error(
        client,
        "search_observations",
        json!({"query": "x", "entity_types": [""]}),
    )
    .await;
    assert!(bad_types.contains("entity_types[0]"), "{bad_types}");
    // Tools without parameters refuse unknown ones, and work with no arguments at all.
    let Value::Object(arguments) = json!({"workspace": "other"}) else {
        unreachable!()
    };
    let unknown = client
        .call_tool(CallToolRequestParams::new("get_stats").with_arguments(arguments))
        .await;
    let unknown = match unknown {
        Ok(result) => serde_json::to_string(&result).unwrap(),
        Err(error) => error.to_string(),
    };
    assert!(
        unknown.contains("unknown argument `workspace`: this tool takes no arguments")
            && unknown.contains("\"isError\":true"),
        "{unknown}"
    );
    let bare = client
        .call_tool(CallToolRequestParams::new("get_stats"))
        .await
        .unwrap();
    assert_ne!(bare.is_error, Some(true), "{bare:?}");
    let similar = ok(client, "find_similar_nodes", json!({"min_score": 0.999})).await;
    assert!(similar["pairs"].as_array().unwrap().is_empty(), "{similar}");
    let reflection = json!({"target": {"node": "Alice"}, "content": "Alice was the right hire"});
    assert_eq!(
        ok(client, "add_reflection", reflection).await["target"]["node"],
        "Alice"
    );
    let opened = ok(client, "open_nodes", json!({"names": ["Alice"]})).await;
    let shown = &opened["entities"][0]["reflections"][0]["content"];
    assert_eq!(shown, "Alice was the right hire", "{opened}");
    let hire = json!({"query": "hire", "min_score": 0});
    let reflections = ok(client, "search_reflections", hire).await;
    assert_eq!(
        reflections["results"][0]["content"],
        "Alice was the right hire"
    );

    // What a model can fix comes back as a tool error naming the problem.
    let missing = tool_error(
        client,
        "set_summary",
        json!({"name": "Nobody", "summary": "x"}),
    )
    .await;
    assert_eq!(missing, "node not found: Nobody");
    let too_deep = tool_error(
        client,
        "get_neighborhood",
        json!({"name": "Alice", "depth": 7}),
    )
    .await;
    assert!(
        too_deep.contains("`depth`") && too_deep.contains("between 0 and 6"),
        "{too_deep}"
    );
}

/// Semantic search through MCP: the indexer embeds in the background; once coverage is
/// complete, a paraphrase finds its node, and nonsense finds nothing.
pub async fn a_paraphrase_finds_its_node_over_mcp(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    ok(&client, "create_entities", json!({"entities": [
        {"name": "Alice", "entity_type": "person", "observations": ["Alice moved to Lisbon in March"]},
        {"name": "Bob", "entity_type": "person", "observations": ["Bob compiles Rust with cargo"]},
    ]})).await;
    let mut coverage = 0.0;
    for _ in 0..600 {
        coverage = ok(&client, "get_stats", json!({})).await["embedding_coverage"]
            .as_f64()
            .unwrap();
        if coverage >= 1.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(coverage, 1.0, "the indexer did not finish");
    let found = ok(
        &client,
        "search_nodes",
        json!({"query": "where does Alice live now"}),
    )
    .await;
    assert_eq!(found["mode"], "hybrid");
    assert_eq!(found["results"][0]["name"], "Alice");
    assert_eq!(found["results"][0]["matched_perspective"], "general");
    let signals = found["results"][0]["signals"].as_array().unwrap();
    assert!(signals.contains(&json!("embedding:general")), "{found}");
    // Nonsense finds nothing with the default model either, and says so.
    let nothing = ok(&client, "search_nodes", json!({"query": "zzzzqqq"})).await;
    assert_eq!(nothing["results"], json!([]), "{nothing}");
    let notice = nothing["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("nothing in memory matched"), "{nothing}");
    client.cancel().await.unwrap();
}

pub async fn every_tool_over_streamable_http(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    exercise_every_tool_and_close(client).await;
}

pub async fn every_tool_over_legacy_sse(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = sse_client::connect(&server.base, "demo").await;
    exercise_every_tool_and_close(client).await;
}
