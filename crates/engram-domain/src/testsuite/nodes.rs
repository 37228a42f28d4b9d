use std::sync::Arc;

use super::*;
use crate::{Error, MemoryStore, NewNode, TypedNode};

pub async fn create_entities_returns_rows_in_order_and_leaves_existing_names_alone(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let first = memory
        .call(
            ws,
            CreateEntities::new(vec![NewNode {
                summary: Some("a tea drinker".into()),
                tags: strings(&["a", "b", "a"]),
                ..entity("Alice", "person", &["likes tea", "lives in Lisbon"])
            }]),
        )
        .await
        .unwrap()
        .entities;
    assert_eq!(first.len(), 1);
    assert_eq!(
        (
            first[0].name.as_str(),
            first[0].entity_type.as_str(),
            first[0].already_existed
        ),
        ("Alice", "person", false)
    );
    let alice = open_node(&memory, ws, "Alice").await;
    assert_eq!(alice.created_at, first[0].created_at);
    assert_eq!(alice.updated_at, first[0].created_at);
    assert_eq!(alice.summary.as_deref(), Some("a tea drinker"));
    assert_eq!(alice.tags, ["a", "b"]);
    assert_eq!(
        undated(&alice.observations),
        observations(&[(1, "likes tea"), (2, "lives in Lisbon")])
    );
    tick().await;

    let second = memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("Bob", "person", &["plays chess"]),
                NewNode {
                    summary: Some("a robot".into()),
                    tags: strings(&["x"]),
                    ..entity("Alice", "robot", &["beeps"])
                },
                entity("Carol", "place", &[]),
            ]),
        )
        .await
        .unwrap()
        .entities;
    let rows: Vec<(&str, &str, bool)> = second
        .iter()
        .map(|r| (r.name.as_str(), r.entity_type.as_str(), r.already_existed))
        .collect();
    assert_eq!(
        rows,
        [
            ("Bob", "person", false),
            ("Alice", "person", true),
            ("Carol", "place", false)
        ]
    );
    assert_eq!(second[1].created_at, first[0].created_at);
    assert!(second[0].created_at > first[0].created_at);
    assert_eq!(
        second[0].created_at, second[2].created_at,
        "one transaction"
    );
    // Alice is exactly as she was: type, summary, tags, observations and times.
    assert_eq!(open_node(&memory, ws, "Alice").await, alice);
    assert_eq!(
        undated(&open_node(&memory, ws, "Bob").await.observations),
        observations(&[(1, "plays chess")])
    );
    assert_eq!(counts(&memory, ws).await, (3, 3, 0));
}

pub async fn create_entities_rejects_a_batch_with_any_invalid_entity(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["Existing"]).await;
    let before = (counts(&memory, ws).await, events(&memory, ws).await);

    let invalid = memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("New", "thing", &["fact"]),
                entity("Other", "", &[]),
            ]),
        )
        .await;
    assert_eq!(
        invalid.unwrap_err(),
        Error::invalid("entities[1].entity_type", "must not be empty")
    );
    let repeated = memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("Dup", "thing", &[]),
                entity("Other", "thing", &[]),
                entity("Dup", "thing", &[]),
            ]),
        )
        .await;
    assert_eq!(
        repeated.unwrap_err(),
        Error::invalid(
            "entities[2].name",
            "repeats entities[0].name within one call"
        )
    );
    assert_eq!(
        (counts(&memory, ws).await, events(&memory, ws).await),
        before
    );
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["New", "Other", "Dup"])))
        .await
        .unwrap();
    assert!(opened.entities.is_empty());
    assert_eq!(opened.not_found, ["New", "Other", "Dup"]);
}

pub async fn delete_entities_cascades_to_observations_relations_and_events(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "C"]).await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("B", "thing", &["b one", "b two"])]),
        )
        .await
        .unwrap();
    create_relations(
        &memory,
        ws,
        &[("A", "knows", "B"), ("B", "likes", "C"), ("A", "sees", "C")],
    )
    .await;
    assert_eq!(counts(&memory, ws).await, (3, 2, 3));
    // 3 nodes, 2 observations, 3 relations.
    assert_eq!(events(&memory, ws).await, (8, 0, 0));
    let a_before = open_node(&memory, ws, "A").await.updated_at;
    let c_before = open_node(&memory, ws, "C").await.updated_at;
    tick().await;

    let deleted = memory
        .call(ws, DeleteEntities::new(&strings(&["B", "Nobody", "B"])))
        .await
        .unwrap();
    assert_eq!(deleted.deleted, ["B"]);
    assert_eq!(deleted.not_found, ["Nobody"]);

    assert_eq!(counts(&memory, ws).await, (2, 0, 1));
    let survivors = memory
        .call(ws, OpenNodes::new(&strings(&["A", "C", "B"])))
        .await
        .unwrap();
    assert_eq!(survivors.relations, [edge("A", "sees", "C")]);
    assert_eq!(survivors.not_found, ["B"]);
    // Both survivors lost a relation (one in each direction), so both were written.
    assert!(survivors.entities[0].updated_at > a_before);
    assert!(survivors.entities[1].updated_at > c_before);
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "B"))
            .await
            .unwrap_err(),
        Error::node_not_found("B")
    );
    // B's own events (its creation, its observations', and B -likes-> C's, which is filed
    // under its source B) are gone. Left: A and C created, A's two relations created; B
    // deleted, and A -knows-> B deleted (filed under A, which survives).
    assert_eq!(events(&memory, ws).await, (4, 0, 2));

    // A node of the same name starts from scratch.
    create_nodes(&memory, ws, &["B"]).await;
    let reborn = memory
        .call(ws, OpenNodes::new(&strings(&["B"])))
        .await
        .unwrap();
    assert!(reborn.entities[0].observations.is_empty());
    assert!(reborn.relations.is_empty());
    let added = memory
        .call(ws, AddObservations::new(&[additions("B", &["fresh"])]))
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added, observations(&[(1, "fresh")]));
}

pub async fn open_nodes_returns_observations_in_order_and_touching_relations(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("A", "thing", &["first", "second"])]),
        )
        .await
        .unwrap();
    create_nodes(&memory, ws, &["B", "C", "D"]).await;
    memory
        .call(ws, AddObservations::new(&[additions("A", &["third"])]))
        .await
        .unwrap();
    tick().await;
    // Rewriting the first observation does not move it to the end.
    memory
        .call(
            ws,
            ReplaceObservation::new("A", crate::Ordinal(1), "first, revised"),
        )
        .await
        .unwrap();
    create_relations(
        &memory,
        ws,
        &[
            ("A", "knows", "B"),
            ("C", "likes", "A"),
            ("B", "meets", "C"),
            ("D", "x", "A"),
        ],
    )
    .await;

    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["D", "Missing", "A"])))
        .await
        .unwrap();
    let names: Vec<&str> = opened.entities.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["D", "A"]);
    assert_eq!(
        undated(&opened.entities[1].observations),
        observations(&[(1, "first, revised"), (2, "second"), (3, "third")])
    );
    assert!(opened.entities[0].observations.is_empty());
    // Both directions; D -x-> A once although both ends were asked for; not B -meets-> C.
    assert_eq!(
        opened.relations,
        [
            edge("A", "knows", "B"),
            edge("C", "likes", "A"),
            edge("D", "x", "A")
        ]
    );
    assert_eq!(opened.not_found, ["Missing"]);

    let nothing = memory
        .call(ws, OpenNodes::new(&strings(&["Ghost"])))
        .await
        .unwrap();
    assert!(nothing.entities.is_empty() && nothing.relations.is_empty());
    assert_eq!(nothing.not_found, ["Ghost"]);
}

pub async fn get_nodes_by_type_lists_one_type_by_name(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("Zed", "person", &[]),
                NewNode {
                    summary: Some("the first".into()),
                    tags: strings(&["vip"]),
                    ..entity("Amy", "person", &[])
                },
                entity("Box", "thing", &[]),
            ]),
        )
        .await
        .unwrap();
    let amy = open_node(&memory, ws, "Amy").await;
    let zed = open_node(&memory, ws, "Zed").await;
    assert_eq!(
        memory
            .call(ws, GetNodesByType::new("person"))
            .await
            .unwrap()
            .nodes,
        [
            TypedNode {
                name: "Amy".into(),
                entity_type: "person".into(),
                summary: Some("the first".into()),
                tags: strings(&["vip"]),
                updated_at: amy.updated_at,
            },
            TypedNode {
                name: "Zed".into(),
                entity_type: "person".into(),
                summary: None,
                tags: Vec::new(),
                updated_at: zed.updated_at,
            },
        ]
    );
    assert!(
        memory
            .call(ws, GetNodesByType::new("robot"))
            .await
            .unwrap()
            .nodes
            .is_empty()
    );
}

pub async fn get_recently_modified_is_newest_first_and_limited(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    for name in ["A", "B", "C"] {
        create_nodes(&memory, ws, &[name]).await;
        tick().await;
    }
    memory
        .call(ws, SetSummary::new("A", "written last"))
        .await
        .unwrap();

    let recent = memory
        .call(ws, GetRecentlyModified::new(1, 20))
        .await
        .unwrap()
        .nodes;
    let rows: Vec<(&str, &str, Option<&str>)> = recent
        .iter()
        .map(|n| {
            (
                n.name.as_str(),
                n.entity_type.as_str(),
                n.summary.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("A", "thing", Some("written last")),
            ("C", "thing", None),
            ("B", "thing", None)
        ]
    );
    for node in &recent {
        assert_eq!(
            node.updated_at,
            open_node(&memory, ws, &node.name).await.updated_at
        );
    }
    assert!(recent[0].updated_at > recent[1].updated_at);
    assert!(recent[1].updated_at > recent[2].updated_at);

    let limited = memory
        .call(ws, GetRecentlyModified::new(7, 2))
        .await
        .unwrap()
        .nodes;
    assert_eq!(limited, recent[..2]);
}

pub async fn set_summary_and_set_tags_write_the_node(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["N"]).await;

    let summary = memory
        .call(ws, SetSummary::new("N", "a node"))
        .await
        .unwrap();
    assert_eq!(
        (summary.name.as_str(), summary.summary.as_str()),
        ("N", "a node")
    );
    assert_eq!(
        summary.updated_at,
        open_node(&memory, ws, "N").await.updated_at
    );
    let replaced = memory
        .call(ws, SetSummary::new("N", "the node"))
        .await
        .unwrap();
    assert_eq!(replaced.summary, "the node");

    let tags = memory
        .call(ws, SetTags::new("N", &strings(&["b", "a", "b", "c", "a"])))
        .await
        .unwrap();
    assert_eq!(
        (tags.name.as_str(), tags.tags.clone()),
        ("N", strings(&["b", "a", "c"]))
    );
    let node = open_node(&memory, ws, "N").await;
    assert_eq!(node.tags, ["b", "a", "c"]);
    assert_eq!(node.summary.as_deref(), Some("the node"));

    let cleared = memory.call(ws, SetTags::new("N", &[])).await.unwrap();
    assert!(cleared.tags.is_empty());
    assert!(open_node(&memory, ws, "N").await.tags.is_empty());

    assert_eq!(
        memory
            .call(ws, SetSummary::new("Ghost", "boo"))
            .await
            .unwrap_err(),
        Error::node_not_found("Ghost")
    );
    assert_eq!(
        memory
            .call(ws, SetTags::new("Ghost", &strings(&["x"])))
            .await
            .unwrap_err(),
        Error::node_not_found("Ghost")
    );
    assert_eq!(counts(&memory, ws).await, (1, 0, 0));
}
