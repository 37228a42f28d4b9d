//! Memory over time through a real MCP client over Streamable HTTP: a project's months, where a
//! relation ends and another begins, a fact stops being true, a text is replaced, and a fact
//! expires; the default reads see now, `as_of` and `include_ended` the rest.

use serde_json::{Value, json};

use crate::scenario::{ok, tool_error};
use crate::server::{Backend, TestServer};

fn relation_targets(opened: &Value) -> Vec<String> {
    (opened["relations"].as_array().unwrap().iter())
        .map(|r| {
            format!(
                "{} {}",
                r["relation_type"].as_str().unwrap(),
                r["to"].as_str().unwrap()
            )
        })
        .collect()
}

fn texts(opened: &Value) -> Vec<&str> {
    (opened["entities"][0]["observations"]
        .as_array()
        .unwrap()
        .iter())
    .map(|o| o["content"].as_str().unwrap())
    .collect()
}

pub async fn a_projects_months_play_out_over_streamable_http(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entity_type": "person", "observations": [
                "Alice reviews every storage change",
                {"content": "Alice is on the hiring panel", "valid_from": "2026-01-10T00:00:00Z"},
                {"content": "Alice is on call this week",
                 "expires_at": (chrono::Utc::now() + chrono::Duration::days(5)).to_rfc3339()},
            ]},
            {"name": "Acme", "entity_type": "company"},
            {"name": "Globex", "entity_type": "company"},
        ]}),
    )
    .await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "Acme",
                              "relation_type": "works_at", "valid_from": "2026-01-01T00:00:00Z"}]}),
    )
    .await;

    // May: she leaves Acme for Globex; she leaves the hiring panel.
    let ended = ok(
        &client,
        "end_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "Acme", "relation_type": "works_at"}],
               "ended_at": "2026-05-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(
        ended,
        json!({"ended": [{"from_entity": "Alice", "to_entity": "Acme", "relation_type": "works_at"}],
               "not_found": []})
    );
    ok(
        &client,
        "create_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "Globex", "relation_type": "works_at"}]}),
    )
    .await;
    let ended = ok(
        &client,
        "end_observations",
        json!({"endings": [{"entity_name": "Alice", "ordinals": [2, 7]}],
               "ended_at": "2026-05-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(
        ended,
        json!({"results": [{"entity_name": "Alice", "ended_ordinals": [2], "not_found_ordinals": [7]}]})
    );

    // Now: Globex, and the facts that still hold (the expiring one says until when).
    let now = ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(relation_targets(&now), ["works_at Globex"]);
    assert_eq!(
        texts(&now),
        [
            "Alice reviews every storage change",
            "Alice is on call this week"
        ]
    );
    let facts = now["entities"][0]["observations"].as_array().unwrap();
    assert!(facts[0].get("valid_to").is_none(), "{now}");
    assert!(facts[1]["valid_to"].is_string(), "{now}");
    let between = ok(
        &client,
        "get_relations_between",
        json!({"entity_a": "Alice", "entity_b": "Acme"}),
    )
    .await;
    assert_eq!(between["relations"], json!([]));

    // March: Acme, and the panel.
    let march = ok(
        &client,
        "open_nodes",
        json!({"names": ["Alice"], "as_of": "2026-03-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(relation_targets(&march), ["works_at Acme"]);
    assert_eq!(texts(&march), ["Alice is on the hiring panel"]);
    assert_eq!(
        march["relations"][0]["valid_to"],
        json!("2026-05-01T00:00:00Z")
    );
    let neighbours = ok(
        &client,
        "get_neighborhood",
        json!({"name": "Acme", "as_of": "2026-03-01T00:00:00Z"}),
    )
    .await;
    let names: Vec<&str> = (neighbours["nodes"].as_array().unwrap().iter())
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Acme", "Alice"]);

    // Everything, with its period.
    let ever = ok(
        &client,
        "open_nodes",
        json!({"names": ["Alice"], "include_ended": true}),
    )
    .await;
    assert_eq!(
        relation_targets(&ever),
        ["works_at Acme", "works_at Globex"]
    );
    assert_eq!(texts(&ever).len(), 3);

    // A replaced text is the earlier version of its ordinal.
    let before_replacing = chrono::Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    ok(
        &client,
        "replace_observation",
        json!({"entity_name": "Alice", "ordinal": 1, "new_content": "Alice reviews storage and search changes"}),
    )
    .await;
    let then = ok(
        &client,
        "open_nodes",
        json!({"names": ["Alice"], "as_of": before_replacing.to_rfc3339()}),
    )
    .await;
    assert!(
        texts(&then).contains(&"Alice reviews every storage change"),
        "{then}"
    );

    // The history has both employers, the end, and the replaced text.
    let history = ok(&client, "get_history", json!({"name": "Alice"})).await;
    let entries: Vec<String> = (history["events"].as_array().unwrap().iter())
        .map(|e| {
            let relation = e["relation"]["to"].as_str().unwrap_or_default();
            format!("{} {relation}", e["operation"].as_str().unwrap())
                .trim()
                .to_owned()
        })
        .collect();
    for expected in [
        "relation_created Globex",
        "relation_ended Acme",
        "relation_created Acme",
        "observation_ended",
        "observation_replaced",
        "created",
    ] {
        assert!(
            entries.contains(&expected.to_owned()),
            "{expected}: {entries:?}"
        );
    }
    assert_eq!(history["next_before"], Value::Null);
    // Written over HTTP without tokens: by `local`, the end given May's time included.
    for (entry, expected) in (history["events"].as_array().unwrap().iter()).zip(&entries) {
        if ["created", "relation_created Globex", "relation_ended Acme"].contains(&&**expected) {
            assert_eq!(entry["author"], "local", "{expected}: {history}");
        }
    }

    // Searches see what holds: the employer fact that ended in May is found only as of March.
    let added = ok(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Alice", "contents": [
            {"content": "Alice works at Acme as a storage engineer",
             "valid_from": "2026-01-01T00:00:00Z"},
            "Alice works at Globex on search"]}]}),
    )
    .await;
    let acme_fact = &added["results"][0]["added"][0]["ordinal"];
    ok(
        &client,
        "end_observations",
        json!({"endings": [{"entity_name": "Alice", "ordinals": [acme_fact]}],
               "ended_at": "2026-05-01T00:00:00Z"}),
    )
    .await;
    let matched = |found: &Value| -> Vec<String> {
        (found["results"].as_array().unwrap().iter())
            .map(|r| r["matched_observation"].as_str().unwrap().to_owned())
            .collect()
    };
    let query = json!({"query": "where does Alice work", "mode": "text"});
    let found = matched(&ok(&client, "search_nodes", query.clone()).await);
    assert_eq!(found[0], "Alice works at Globex on search", "{found:?}");
    assert!(found.iter().all(|m| !m.contains("Acme")), "{found:?}");
    let mut in_march = query;
    in_march["as_of"] = json!("2026-03-01T00:00:00Z");
    let march = ok(&client, "search_nodes", in_march).await;
    let found = matched(&march);
    assert_eq!(
        found[0], "Alice works at Acme as a storage engineer",
        "{found:?}"
    );
    assert!(found.iter().all(|m| !m.contains("Globex")), "{found:?}");
    // The row names the fact that matched and since when it holds: the day it was given.
    let first = &march["results"][0];
    assert_eq!(&first["ordinal"], acme_fact, "{march}");
    assert_eq!(first["valid_from"], "2026-01-01", "{march}");

    // Refusals name the argument and change nothing.
    let refused = tool_error(
        &client,
        "end_relations",
        json!({"relations": [{"from_entity": "Alice", "to_entity": "Globex", "relation_type": "works_at"}],
               "ended_at": "2020-01-01T00:00:00Z"}),
    )
    .await;
    assert!(refused.contains("ended_at"), "{refused}");
    let refused = tool_error(
        &client,
        "open_nodes",
        json!({"names": ["Alice"], "include_ended": true, "as_of": "2026-03-01T00:00:00Z"}),
    )
    .await;
    assert!(refused.contains("include_ended"), "{refused}");
    let refused = tool_error(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Alice", "contents": [
            {"content": "Alice will lead search", "valid_from": "2099-01-01T00:00:00Z"}]}]}),
    )
    .await;
    assert!(
        refused.contains("observations[0].contents[0].valid_from"),
        "{refused}"
    );
    let now_again = ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(relation_targets(&now_again), ["works_at Globex"]);

    // Duplicates: "Postgres" merged into "PostgreSQL" answers by its old name.
    ok(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "PostgreSQL", "entity_type": "database", "observations": ["stores the graph"]},
            {"name": "Postgres", "entity_type": "database", "observations": ["has pgvector"]},
        ]}),
    )
    .await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [{"from_entity": "Globex", "to_entity": "Postgres", "relation_type": "runs"}]}),
    )
    .await;
    let merged = ok(
        &client,
        "merge_entities",
        json!({"sources": ["Postgres"], "target": "PostgreSQL"}),
    )
    .await;
    assert_eq!(merged["aliases"], json!(["Postgres"]));
    let opened = ok(&client, "open_nodes", json!({"names": ["Postgres"]})).await;
    assert_eq!(opened["entities"][0]["name"], "PostgreSQL");
    assert_eq!(texts(&opened), ["stores the graph", "has pgvector"]);
    assert_eq!(
        opened["relations"],
        json!([{"from": "Globex", "to": "PostgreSQL", "relation_type": "runs"}])
    );

    // An overgrown node of three topics is proposed as three groups, and split.
    let facts: Vec<String> = (0..40)
        .map(|i| match i % 3 {
            0 => format!("the kitchen recipe {i} needs a slow simmer of the sauce"),
            1 => format!("the observatory telescope tracked star {i} across the night sky"),
            _ => format!("the accountant filed tax return {i} with the invoices"),
        })
        .collect();
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Notebook", "entity_type": "note", "observations": facts}]}),
    )
    .await;
    // The report names it, and facts of a node that update or repeat one another.
    ok(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Globex", "contents": [
            "The Globex release freeze ends on 12 May", "Globex hosts PostgreSQL in Frankfurt"]}]}),
    )
    .await;
    let added = ok(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Globex", "contents": [
            "The Globex release freeze ends on 19 May"]}]}),
    )
    .await;
    assert_eq!(
        added["results"][0]["similar_to"],
        json!([{"ordinal": 3, "similar_ordinal": 1, "kind": "may_update",
                "content": "The Globex release freeze ends on 12 May"}]),
        "{added}"
    );
    let report = ok(&client, "get_consolidation_report", json!({})).await;
    let notebook = (report["split_candidates"].as_array().unwrap().iter())
        .find(|c| c["name"] == "Notebook")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(notebook["groups"].as_array().unwrap().len(), 3, "{report}");
    assert_eq!(
        report["possibly_superseded"][0],
        json!({"name": "Globex", "ordinals": [1, 3], "contents": [
            "The Globex release freeze ends on 12 May",
            "The Globex release freeze ends on 19 May"]}),
        "{report}"
    );
    // A query by the merged name finds the facts that name the node.
    let found = ok(
        &client,
        "search_nodes",
        json!({"query": "Postgres", "mode": "text"}),
    )
    .await;
    assert_eq!(found["results"][0]["name"], "Globex", "{found}");

    let proposal = ok(&client, "propose_split", json!({"name": "Notebook"})).await;
    let groups = proposal["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3, "{proposal}");
    for group in groups {
        let topics: std::collections::BTreeSet<i64> = (group["ordinals"].as_array().unwrap())
            .iter()
            .map(|o| (o.as_i64().unwrap() - 1) % 3)
            .collect();
        assert_eq!(topics.len(), 1, "one topic a group: {proposal}");
    }
    let parts: Vec<Value> = (groups.iter().enumerate())
        .map(|(i, g)| json!({"name": format!("Notebook part {i}"), "ordinals": g["ordinals"]}))
        .collect();
    let split = ok(
        &client,
        "split_entity",
        json!({"name": "Notebook", "parts": parts}),
    )
    .await;
    assert_eq!(split["relations"].as_array().unwrap().len(), 3);
    let left = ok(&client, "open_nodes", json!({"names": ["Notebook"]})).await;
    assert!(texts(&left).is_empty(), "{left}");
    assert_eq!(left["relations"].as_array().unwrap().len(), 3);

    // A fact that expires is gone once it has.
    let soon = (chrono::Utc::now() + chrono::Duration::milliseconds(800)).to_rfc3339();
    ok(
        &client,
        "add_observations",
        json!({"observations": [{"entity_name": "Alice", "contents": [
            {"content": "the staging freeze lasts until Friday", "expires_at": soon}]}]}),
    )
    .await;
    let frozen = ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert!(texts(&frozen).contains(&"the staging freeze lasts until Friday"));
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let thawed = ok(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert!(
        !texts(&thawed).contains(&"the staging freeze lasts until Friday"),
        "{thawed}"
    );
    client.cancel().await.unwrap();
}

/// Times out of range and times inside a fact object are argument errors naming the field
/// (issue 60: year 0 was an internal error on PostgreSQL and stored by SQLite; a bad
/// `expires_at` inside a fact was called an unknown argument).
pub async fn a_time_out_of_range_or_inside_a_fact_is_named_as_an_argument(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "N", "entity_type": "t"}]}),
    )
    .await;
    for (tool, arguments, field) in [
        (
            "open_nodes",
            json!({"names": ["N"], "as_of": "0000-03-01T00:00:00Z"}),
            "as_of",
        ),
        (
            "get_history",
            json!({"name": "N", "before": "0000-03-01T00:00:00Z"}),
            "before",
        ),
        (
            "add_observations",
            json!({"observations": [{"entity_name": "N",
                   "contents": [{"content": "y", "valid_from": "0000-03-01T00:00:00Z"}]}]}),
            "observations[0].contents[0].valid_from",
        ),
        (
            "add_observations",
            json!({"observations": [{"entity_name": "N",
                   "contents": [{"content": "y", "expires_at": "next tuesday"}]}]}),
            "observations[0].contents[0].expires_at",
        ),
    ] {
        let error = tool_error(&client, tool, arguments).await;
        assert!(
            error.starts_with(&format!(
                "invalid argument `{field}`: expected an RFC 3339 time"
            )),
            "{tool}: {error}"
        );
    }
    let opened = ok(&client, "open_nodes", json!({"names": ["N"]})).await;
    assert_eq!(
        opened["entities"][0]["observations"],
        json!([]),
        "nothing was written"
    );
    client.cancel().await.unwrap();
}
