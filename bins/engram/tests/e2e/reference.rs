//! An agent prompted for Anthropic's reference memory server (`@modelcontextprotocol/
//! server-memory`) works unchanged: the calls of that server's README, with its field names,
//! over Streamable HTTP; and `read_graph`, paged.

use serde_json::{Value, json};

use crate::scenario::ok;
use crate::server::{Backend, TestServer};

fn names(values: &Value) -> Vec<&str> {
    (values.as_array().unwrap().iter())
        .map(|v| v["name"].as_str().unwrap())
        .collect()
}

pub async fn the_reference_servers_calls_work_unchanged(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "John_Smith", "entityType": "person",
             "observations": ["Speaks fluent Spanish"]},
            {"name": "Anthropic", "entityType": "organization", "observations": []},
        ]}),
    )
    .await;
    let created = ok(
        &client,
        "create_relations",
        json!({"relations": [{"from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}]}),
    )
    .await;
    assert_eq!(created["created"].as_array().unwrap().len(), 1, "{created}");
    ok(
        &client,
        "add_observations",
        json!({"observations": [{"entityName": "John_Smith",
                                 "contents": ["Graduated in 2019", "Prefers morning meetings"]}]}),
    )
    .await;
    let deleted = ok(
        &client,
        "delete_observations",
        json!({"deletions": [{"entityName": "John_Smith",
                              "observations": ["Graduated in 2019", "never said"]}]}),
    )
    .await;
    assert_eq!(
        deleted["results"][0]["deleted_ordinals"],
        json!([2]),
        "{deleted}"
    );
    let opened = ok(
        &client,
        "open_nodes",
        json!({"names": ["John_Smith", "Anthropic"]}),
    )
    .await;
    let john = &opened["entities"][0];
    assert_eq!(john["entity_type"], "person");
    let contents: Vec<&str> = (john["observations"].as_array().unwrap().iter())
        .map(|o| o["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        ["Speaks fluent Spanish", "Prefers morning meetings"]
    );
    let found = ok(&client, "search_nodes", json!({"query": "Spanish"})).await;
    assert_eq!(found["results"][0]["name"], "John_Smith");
    let graph = ok(&client, "read_graph", json!({})).await;
    assert_eq!(names(&graph["entities"]), ["Anthropic", "John_Smith"]);
    assert_eq!(graph["relations"][0]["relation_type"], "works_at");
    ok(
        &client,
        "delete_relations",
        json!({"relations": [{"from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}]}),
    )
    .await;
    ok(
        &client,
        "delete_entities",
        json!({"entityNames": ["Anthropic"]}),
    )
    .await;
    let graph = ok(&client, "read_graph", json!({})).await;
    assert_eq!(names(&graph["entities"]), ["John_Smith"]);
    assert_eq!(graph["relations"], json!([]));
    client.cancel().await.unwrap();
}

pub async fn read_graph_walks_a_large_graph_page_by_page(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    let entities: Vec<Value> = (0..120)
        .map(|i| json!({"name": format!("n{i:03}"), "entity_type": if i % 2 == 0 { "even" } else { "odd" },
                        "observations": [format!("fact {i}")]}))
        .collect();
    ok(&client, "create_entities", json!({"entities": entities})).await;
    let relations: Vec<Value> = (0..119)
        .map(|i| {
            json!({"from_entity": format!("n{i:03}"), "to_entity": format!("n{:03}", i + 1),
                        "relation_type": "next"})
        })
        .collect();
    ok(&client, "create_relations", json!({"relations": relations})).await;

    let (mut seen, mut edges, mut cursor, mut pages) = (Vec::new(), 0, None::<String>, 0);
    loop {
        let mut arguments = json!({"detail": "names"});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = ok(&client, "read_graph", arguments).await;
        pages += 1;
        assert_eq!(
            (
                page["total_entities"].as_u64(),
                page["total_relations"].as_u64()
            ),
            (Some(120), Some(119))
        );
        assert!(
            page["entities"][0].get("observation_count").is_none(),
            "names only: {page}"
        );
        seen.extend(names(&page["entities"]).into_iter().map(str::to_owned));
        edges += page["relations"].as_array().unwrap().len();
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3, "50 a page by default");
    assert_eq!(seen.len(), 120);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(edges, 119);

    let odd = ok(
        &client,
        "read_graph",
        json!({"entity_type": "odd", "limit": 2, "detail": "full"}),
    )
    .await;
    assert_eq!(names(&odd["entities"]), ["n001", "n003"]);
    assert_eq!(odd["entities"][0]["observations"][0]["content"], "fact 1");
    assert_eq!(odd["entities"][0]["observation_count"], 1);
    assert_eq!(odd["total_entities"], 60);
    client.cancel().await.unwrap();
}
