//! What a model and its client see of the tools: an argument of the wrong type is answered
//! naming it, on every tool; the tool list fits the caller (`--tools`, read-only sessions);
//! texts a node holds are not stored twice; and the MCP Inspector, a strict client, lists and
//! calls the tools without a warning.

use std::process::Command;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::scenario::{names, ok, tool_error, undated};
use crate::server::{Backend, Client, TestServer};

/// A value of another JSON type than `property` asks for.
fn wrong_value(property: &Value) -> Value {
    match property["type"].as_str() {
        Some("string") => json!(42),
        Some("integer") => json!("two"),
        Some("number") => json!("high"),
        Some("boolean") => json!("yes"),
        Some("array") => json!("x"),
        Some("object") => json!(5),
        other => panic!("a property of unknown type {other:?}: {property}"),
    }
}

async fn call_named(client: &Client, tool: &str, arguments: Value) -> rmcp::model::CallToolResult {
    let Value::Object(arguments) = arguments else {
        unreachable!("arguments are an object")
    };
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    client
        .call_tool(request)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub async fn every_tool_names_an_argument_of_the_wrong_type(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    let tools = client.list_all_tools().await.unwrap();
    let mut checked = 0;
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (argument, property) in &properties {
            let result = call_named(
                &client,
                &tool.name,
                json!({ argument: wrong_value(property) }),
            )
            .await;
            let message = text(&result);
            assert_eq!(result.is_error, Some(true), "{}: {message}", tool.name);
            assert!(
                message.starts_with(&format!("invalid argument `{argument}`: expected ")),
                "{}: {message}",
                tool.name
            );
            checked += 1;
        }
        if properties.is_empty() {
            let result = call_named(&client, &tool.name, json!({"depth": 1})).await;
            assert_eq!(result.is_error, Some(true), "{}", tool.name);
            assert_eq!(
                text(&result),
                "unknown argument `depth`: this tool takes no arguments"
            );
        }
    }
    assert!(checked >= 40, "only {checked} arguments checked");

    // The messages a model reads, exactly.
    for (tool, arguments, expected) in [
        (
            "get_neighborhood",
            json!({"name": "x", "depth": "two"}),
            "invalid argument `depth`: expected a non-negative integer, got \"two\"",
        ),
        (
            "get_recently_modified",
            json!({"limit": -1}),
            "invalid argument `limit`: expected a non-negative integer, got -1",
        ),
        (
            "create_entities",
            json!({"entities": [{"name": "a", "entity_type": "t"}, {"name": 5, "entity_type": "t"}]}),
            "invalid argument `entities[1].name`: expected a string, got 5",
        ),
        (
            "search_nodes",
            json!({"query": "x", "mode": "fuzzy"}),
            "invalid argument `mode`: expected one of \"hybrid\", \"embedding\", \"text\", got \"fuzzy\"",
        ),
        (
            "search_nodes",
            json!({"limit": 3}),
            "missing argument `query`: it is required",
        ),
    ] {
        assert_eq!(tool_error(&client, tool, arguments).await, expected);
    }
    // Nothing was written by any of them.
    assert_eq!(ok(&client, "get_stats", json!({})).await["node_count"], 0);
    client.cancel().await.unwrap();
}

/// Characters of what a model reads of a tool list: names, descriptions, input schemas.
fn model_facing_chars(tools: &[rmcp::model::Tool]) -> usize {
    (tools.iter())
        .map(|t| {
            t.name.len()
                + t.description.as_deref().map_or(0, str::len)
                + serde_json::to_string(&*t.input_schema).unwrap().len()
        })
        .sum()
}

pub async fn the_tool_list_fits_the_caller(backend: Backend) {
    // The test servers offer every tool (`--tools all`); the binary's default leaves out
    // groups `graph` and `reflections`.
    let everything = TestServer::start(backend, &["demo"]).await;
    let client = everything.streamable_client("demo").await;
    let every_tool = client.list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
    let guard = engram::http::Guard {
        tools: engram_mcp::ToolSet::default(),
        ..engram::http::Guard::default()
    };
    let by_default = TestServer::start_with_guard(backend, &["demo"], guard).await;
    let client = by_default.streamable_client("demo").await;
    let all = client.list_all_tools().await.unwrap();
    let all_chars = model_facing_chars(&all);
    client.cancel().await.unwrap();
    let name = |tool: &rmcp::model::Tool| tool.name.to_string();
    let offered: Vec<String> = all.iter().map(name).collect();
    for tool in every_tool.iter().map(name) {
        let optional = engram_mcp::GRAPH.contains(&tool.as_str())
            || engram_mcp::REFLECTIONS.contains(&tool.as_str());
        assert_eq!(offered.contains(&tool), !optional, "{tool}");
    }

    let guard = engram::http::Guard {
        tools: "core,get_stats".parse().unwrap(),
        ..engram::http::Guard::default()
    };
    let core = TestServer::start_with_guard(backend, &["demo"], guard).await;
    let client = core.streamable_client("demo").await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = engram_mcp::CORE
        .iter()
        .copied()
        .chain(["get_stats"])
        .collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    // A tool left out cannot be called either.
    let refused = client
        .call_tool(
            CallToolRequestParams::new("get_neighborhood")
                .with_arguments(json!({"name": "x"}).as_object().unwrap().clone()),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    ok(
        &client,
        "search_nodes",
        json!({"query": "x", "mode": "text"}),
    )
    .await;
    let core_chars = model_facing_chars(&tools);
    println!(
        "model-facing tool list: by default {all_chars} characters, core,get_stats {core_chars}, \
         all {}",
        model_facing_chars(&every_tool)
    );
    // The reference server's whole list is 11.2k characters; engram's was 19.7k before its
    // schemas were made portable and inlined and its descriptions cut to what a model needs,
    // 13.3k before the tools of memory over time.
    assert!(all_chars <= 15_000, "{all_chars} characters");
    assert!(
        core_chars * 5 < all_chars * 3,
        "{core_chars} of {all_chars}"
    );
    client.cancel().await.unwrap();
}

pub async fn a_text_the_node_holds_is_skipped_and_reported(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    let created = ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entity_type": "person",
                             "observations": ["lives in Lisbon", "likes tea", "lives in Lisbon"]}]}),
    )
    .await;
    assert_eq!(
        created["entities"][0]["skipped_duplicates"],
        json!([{"ordinal": 1, "content": "lives in Lisbon"}])
    );
    let added = ok(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Alice", "contents": ["likes tea", "plays chess"]}]}),
    )
    .await;
    assert_eq!(
        added,
        json!({"results": [{"entity_name": "Alice",
                            "added": [{"ordinal": 3, "content": "plays chess"}],
                            "not_found": false,
                            "skipped_duplicates": [{"ordinal": 2, "content": "likes tea"}]}]})
    );
    let opened = ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(
        undated(&opened["entities"][0]["observations"]),
        json!([{"ordinal": 1, "content": "lives in Lisbon"}, {"ordinal": 2, "content": "likes tea"},
               {"ordinal": 3, "content": "plays chess"}])
    );
    client.cancel().await.unwrap();
}

/// The MCP Inspector's CLI (npm), a client that checks results against output schemas with a
/// strict validator: lists the tools and calls some, with no warning on its standard error.
/// Needs `npx` and the package (fetched once from npm); without them it says why and passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_lists_and_calls_the_tools_without_a_warning() {
    const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";
    if Command::new("npx").arg("--version").output().is_err() {
        eprintln!("skipped: no npx on PATH to run the MCP Inspector");
        return;
    }
    let server = TestServer::start(Backend::Sqlite, &["demo"]).await;
    let url = format!("{}/mcp", server.base);
    let inspector = |arguments: &[&str]| {
        let output = Command::new("npx")
            .args([
                "-y",
                INSPECTOR,
                "--cli",
                &url,
                "--header",
                "X-Memory-Workspace:demo",
            ])
            .args(arguments)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let warnings: Vec<&str> = (stderr.lines())
            .filter(|line| !line.trim().is_empty() && !line.starts_with("npm warn"))
            .collect();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            warnings.join("\n"),
        )
    };
    let (listed, tools, warnings) = inspector(&["--method", "tools/list"]);
    if !listed && warnings.contains("npm error") {
        eprintln!("skipped: the MCP Inspector could not be fetched from npm: {warnings}");
        return;
    }
    assert!(listed && warnings.is_empty(), "{warnings}");
    let tools: Value = serde_json::from_str(&tools).unwrap();
    assert_eq!(tools["tools"].as_array().unwrap().len(), 40);
    let entities = r#"entities=[{"name":"Alice","entity_type":"person","summary":"a person","observations":["lives in Lisbon"]}]"#;
    for call in [
        vec!["--tool-name", "create_entities", "--tool-arg", entities],
        vec!["--tool-name", "search_nodes", "--tool-arg", "query=Lisbon"],
        vec![
            "--tool-name",
            "open_nodes",
            "--tool-arg",
            r#"names=["Alice","Bob"]"#,
        ],
        vec!["--tool-name", "get_stats"],
        vec!["--tool-name", "get_consolidation_report"],
        vec!["--tool-name", "read_graph", "--tool-arg", "detail=full"],
    ] {
        let arguments: Vec<&str> = ["--method", "tools/call"].into_iter().chain(call).collect();
        let (called, result, warnings) = inspector(&arguments);
        assert!(called && warnings.is_empty(), "{arguments:?}: {warnings}");
        let result: Value = serde_json::from_str(&result).unwrap();
        assert_eq!(result["isError"], false, "{arguments:?}: {result}");
        assert!(result["structuredContent"].is_object(), "{result}");
    }
}

/// The graph vocabulary (group `graph`) over Streamable HTTP: `find_all_paths`,
/// `get_graph_vocabulary`, `describe_node`, `get_subgraph` and `get_relations` in their output
/// schemas' shapes, a bad bound named, and another workspace's nodes not found.
pub async fn the_graph_vocabulary_answers_over_streamable_http(backend: Backend) {
    let server = TestServer::start(backend, &["demo", "other"]).await;
    let client = server.streamable_client("demo").await;
    let entities: Vec<Value> = ["Ada", "Bo", "Cy"]
        .iter()
        .map(|name| json!({"name": name, "entity_type": "person"}))
        .collect();
    ok(&client, "create_entities", json!({ "entities": entities })).await;
    let relations = json!({"relations": [
        {"from_entity": "Ada", "to_entity": "Bo", "relation_type": "knows"},
        {"from_entity": "Cy", "to_entity": "Bo", "relation_type": "knows"},
        {"from_entity": "Ada", "to_entity": "Cy", "relation_type": "mentors"},
    ]});
    ok(&client, "create_relations", relations).await;
    let found = ok(
        &client,
        "find_all_paths",
        json!({"from_entity": "Ada", "to_entity": "Bo"}),
    )
    .await;
    assert_eq!(
        found,
        json!({"paths": [
            {"path": ["Ada", "Bo"], "relations": [
                {"from": "Ada", "to": "Bo", "relation_type": "knows"}]},
            {"path": ["Ada", "Cy", "Bo"], "relations": [
                {"from": "Ada", "to": "Cy", "relation_type": "mentors"},
                {"from": "Cy", "to": "Bo", "relation_type": "knows"}]},
        ]})
    );
    let refused = tool_error(
        &client,
        "find_all_paths",
        json!({"from_entity": "Ada", "to_entity": "Bo", "max_depth": 9}),
    )
    .await;
    assert!(refused.contains("max_depth"), "{refused}");
    let vocabulary = ok(&client, "get_graph_vocabulary", json!({})).await;
    assert_eq!(
        vocabulary,
        json!({"entity_types": [{"name": "person", "count": 3}],
               "relation_types": [{"name": "knows", "count": 2}, {"name": "mentors", "count": 1}]})
    );
    let described = ok(&client, "describe_node", json!({"name": "Bo"})).await;
    assert_eq!(
        described,
        json!({"name": "Bo", "entity_type": "person", "observation_count": 0,
               "degree": {"outgoing": 0, "incoming": 2, "total": 2},
               "neighbours": [
                   {"name": "Ada", "entity_type": "person", "relation_type": "knows", "direction": "in"},
                   {"name": "Cy", "entity_type": "person", "relation_type": "knows", "direction": "in"}]})
    );
    let subgraph = ok(
        &client,
        "get_subgraph",
        json!({"names": ["Ada", "Cy"], "depth": 0}),
    )
    .await;
    assert_eq!(names(&subgraph["nodes"]), ["Ada", "Cy"]);
    assert_eq!(subgraph["relations"].as_array().unwrap().len(), 1);
    let filtered = ok(
        &client,
        "get_relations",
        json!({"to_entity": "Bo", "relation_type": "knows", "limit": 1}),
    )
    .await;
    assert_eq!(
        filtered["relations"],
        json!([{"from": "Ada", "to": "Bo", "relation_type": "knows"}])
    );
    assert!(filtered["notice"].as_str().unwrap().contains("more than 1"));
    client.cancel().await.unwrap();
    let other = server.streamable_client("other").await;
    let missing = tool_error(
        &other,
        "find_all_paths",
        json!({"from_entity": "Ada", "to_entity": "Bo"}),
    )
    .await;
    assert!(missing.contains("Ada"), "{missing}");
    let missing = tool_error(&other, "describe_node", json!({"name": "Bo"})).await;
    assert!(missing.contains("Bo"), "{missing}");
    other.cancel().await.unwrap();
}
