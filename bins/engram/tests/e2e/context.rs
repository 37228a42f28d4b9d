//! Memory agents use without being told, over MCP: prompts and resources on every transport,
//! resource links from search, secrets refused as tool errors. (`engram recall`, `brief` and
//! `hooks` as typed are in `hooks.rs`.)

use rmcp::model::{
    GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams, ResourceContents,
};
use serde_json::{Value, json};

use crate::scenario::{call, ok};
use crate::server::{Backend, Client, TestServer};

/// A small memory: a project, two people, relations, a summary.
pub async fn remember(client: &Client) {
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
    crate::recall::wait_for_indexing(client).await;
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
pub async fn recall_prompt(client: &Client, topic: &str) -> String {
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
async fn prompts_and_resources_answer(client: &Client) {
    remember(client).await;
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.prompts.is_some() && capabilities.resources.is_some());

    let prompts = client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["recall", "consolidate"]);
    let recalled = recall_prompt(client, "Who runs the staging cluster?").await;
    assert!(
        recalled.contains("- Ana María / infra [person]: "),
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
    let short = client
        .read_resource(ReadResourceRequestParams::new(
            "engram://brief?max_chars=200",
        ))
        .await
        .unwrap();
    assert!(resource_text(&short.contents).chars().count() <= 200);
    let bad = client
        .read_resource(ReadResourceRequestParams::new("engram://brief?max_chars=5"))
        .await
        .unwrap_err();
    assert!(
        bad.to_string().contains("`?max_chars=N`, N from 200"),
        "{bad}"
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

    // Malformed parameters of a method MCP has are invalid params (-32602), not an unknown
    // method (-32601).
    for params in [serde_json::json!({}), serde_json::json!({"uri": 5})] {
        let request = rmcp::model::ClientRequest::CustomRequest(rmcp::model::CustomRequest::new(
            "resources/read",
            Some(params.clone()),
        ));
        let error = client.send_request(request).await.unwrap_err();
        let rmcp::ServiceError::McpError(error) = error else {
            panic!("{params}: {error}")
        };
        assert_eq!(
            error.code,
            rmcp::model::ErrorCode::INVALID_PARAMS,
            "{params}: {error:?}"
        );
        assert!(error.message.contains("`uri`"), "{error:?}");
    }

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
    let server = TestServer::start(backend, &["demo"]).await;
    let client = crate::stdio::client(&server.database_url, "demo").await;
    prompts_and_resources_answer(&client).await;
}
