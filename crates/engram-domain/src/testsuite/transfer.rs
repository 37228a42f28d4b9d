use crate::{ImportBatch, ReadGraph};
use std::sync::Arc;

use super::*;
use crate::transfer::*;
use crate::{Error, MemoryStore, SearchMode, SearchNodes};

/// Every page of `workspace` with everything it holds, in name order.
pub async fn export_all(
    memory: &Memory,
    workspace: WorkspaceId,
    page_size: u32,
) -> (Vec<NodeRecord>, Vec<RelationRecord>) {
    let (mut nodes, mut relations) = (Vec::new(), Vec::new());
    let mut after = None;
    loop {
        let query = GraphPageQuery {
            after: after.clone(),
            limit: page_size,
            entity_type: None,
            observations: true,
            over_time: true,
            totals: false,
        };
        let page = memory.graph_page(workspace, &query).await.unwrap();
        relations.extend(page.relations);
        let full = page.nodes.len() == page_size as usize;
        after = page.nodes.last().map(|(node, _)| node.name.clone());
        nodes.extend(page.nodes.into_iter().map(|(node, _)| node));
        if !full {
            return (nodes, relations);
        }
    }
}

fn record(name: &str, entity_type: &str, observations: &[&str]) -> NodeRecord {
    NodeRecord {
        name: name.into(),
        entity_type: entity_type.into(),
        observations: observations
            .iter()
            .map(|content| ObservationRecord {
                content: (*content).into(),
                ..ObservationRecord::default()
            })
            .collect(),
        ..NodeRecord::default()
    }
}

fn link(from: &str, relation_type: &str, to: &str) -> RelationRecord {
    RelationRecord {
        from: from.into(),
        to: to.into(),
        relation_type: relation_type.into(),
        ..RelationRecord::default()
    }
}

pub async fn read_graph_pages_hold_every_node_and_relation_once(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let mut entities: Vec<NewNode> = ["e", "c", "a", "g", "b", "f", "d"]
        .iter()
        .map(|n| entity(n, if *n < "d" { "early" } else { "late" }, &["x", "y"]))
        .collect();
    entities[0].summary = Some("the fifth".into());
    entities[0].tags = strings(&["t"]);
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    create_relations(
        &memory,
        ws,
        &[
            ("a", "r", "g"),
            ("c", "r", "a"),
            ("c", "s", "d"),
            ("d", "r", "d"),
            ("g", "r", "a"),
        ],
    )
    .await;

    let mut cursor = None;
    let (mut names, mut relations, mut pages) = (Vec::new(), Vec::new(), 0);
    loop {
        let page = memory
            .call(
                ws,
                ReadGraph::new(GraphDetail::Names)
                    .cursor(cursor.as_deref())
                    .limit(3),
            )
            .await
            .unwrap();
        pages += 1;
        assert_eq!((page.total_entities, page.total_relations), (7, 5));
        assert!(page.entities.len() <= 3);
        assert!(
            page.entities
                .iter()
                .all(|n| n.summary.is_none() && n.observations.is_none())
        );
        names.extend(page.entities.into_iter().map(|n| n.name));
        relations.extend(page.relations);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, strings(&["a", "b", "c", "d", "e", "f", "g"]));
    assert_eq!(
        relations,
        [
            edge("a", "r", "g"),
            edge("c", "r", "a"),
            edge("c", "s", "d"),
            edge("d", "r", "d"),
            edge("g", "r", "a"),
        ]
    );

    // A type filter narrows nodes, relations and totals; detail widens what each node says.
    let late = memory
        .call(
            ws,
            ReadGraph::new(GraphDetail::Summary)
                .limit(2)
                .entity_type(Some("late")),
        )
        .await
        .unwrap();
    assert_eq!((late.total_entities, late.total_relations), (4, 2));
    assert_eq!(late.next_cursor.as_deref(), Some("e"));
    let e = &late.entities[1];
    assert_eq!(
        (e.summary.as_deref(), e.tags.as_deref(), e.observation_count),
        (Some("the fifth"), Some(&strings(&["t"])[..]), Some(2))
    );
    assert!(e.observations.is_none());
    let last = memory
        .call(
            ws,
            ReadGraph::new(GraphDetail::Full)
                .cursor(Some("e"))
                .limit(2)
                .entity_type(Some("late")),
        )
        .await
        .unwrap();
    assert_eq!(
        last.next_cursor, None,
        "exactly a page left is the last page"
    );
    assert_eq!(
        last.entities[1].observations,
        Some(observations(&[(1, "x"), (2, "y")]))
    );
    assert_eq!(last.relations, [edge("g", "r", "a")]);

    let error = memory
        .call(ws, ReadGraph::new(GraphDetail::Names).limit(0))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { ref field, .. } if field == "limit"));
}

pub async fn import_merges_into_existing_nodes_and_runs_twice_to_the_same_graph(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("Alice", "person", &["likes tea"])]),
        )
        .await
        .unwrap();
    let nodes = vec![
        record(
            "Alice",
            "robot",
            &["likes tea", "lives in Paris", "lives in Paris"],
        ),
        record("Bob", "person", &["works at Acme"]),
    ];
    let relations = vec![
        link("Alice", "knows", "Bob"),
        link("Alice", "knows", "Bob"),
        link("Bob", "knows", "Carol"),
    ];
    let first = memory
        .import(ws, batch(nodes.clone(), &relations))
        .await
        .unwrap();
    assert_eq!(
        first,
        ImportOutcome {
            nodes_created: 1,
            nodes_existing: 1,
            observations_added: 2,
            observations_existing: 2,
            relations_created: 1,
            relations_existing: 1,
            relations_missing: vec![link("Bob", "knows", "Carol")],
            ..ImportOutcome::default()
        }
    );
    let alice = open_node(&memory, ws, "Alice").await;
    assert_eq!(
        alice.entity_type, "person",
        "an existing node keeps its type"
    );
    assert_eq!(
        undated(&alice.observations),
        observations(&[(1, "likes tea"), (2, "lives in Paris")])
    );
    let before = export_all(&memory, ws, 10).await;

    let second = memory.import(ws, batch(nodes, &relations)).await.unwrap();
    assert_eq!(
        (
            second.nodes_created,
            second.observations_added,
            second.relations_created
        ),
        (0, 0, 0)
    );
    assert_eq!(
        (second.observations_existing, second.relations_existing),
        (4, 2)
    );
    assert_eq!(export_all(&memory, ws, 10).await, before);

    // A relation that was missing is created once its endpoint arrives.
    let later = memory
        .import(
            ws,
            batch(
                vec![record("Carol", "person", &[])],
                &[link("Bob", "knows", "Carol")],
            ),
        )
        .await
        .unwrap();
    assert_eq!((later.nodes_created, later.relations_created), (1, 1));
    assert!(later.relations_missing.is_empty());
}

/// One import batch of `nodes` and `relations`.
fn batch(nodes: Vec<NodeRecord>, relations: &[RelationRecord]) -> ImportBatch {
    ImportBatch {
        nodes,
        relations: relations.to_vec(),
    }
}

pub async fn an_invalid_import_record_writes_nothing(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let mut bad = record("Bob", "person", &["fine"]);
    bad.observations.push(ObservationRecord::default());
    let error = memory
        .import(ws, batch(vec![record("Alice", "person", &["x"]), bad], &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::InvalidArgument { ref field, .. }
                 if field == "nodes[1].observations[1].content"),
        "{error}"
    );
    let twice = memory
        .import(
            ws,
            batch(vec![record("A", "t", &[]), record("A", "t", &[])], &[]),
        )
        .await
        .unwrap_err();
    assert!(matches!(twice, Error::InvalidArgument { ref field, .. } if field == "nodes[1].name"));
    assert_eq!(counts(&memory, ws).await, (0, 0, 0));
}

pub async fn an_export_imported_into_an_empty_workspace_is_the_same_graph(
    store: Arc<dyn MemoryStore>,
) {
    let memory = Memory::new(store);
    let source = memory.create_workspace("source").await.unwrap().id;
    let mut alice = entity("Alice", "person", &["one", "two", "three", "four"]);
    alice.summary = Some("A person.".into());
    alice.tags = strings(&["b", "a"]);
    memory
        .call(
            source,
            CreateEntities::new(vec![
                alice,
                entity("Bob", "person", &["hi"]),
                entity("Zed", "thing", &[]),
            ]),
        )
        .await
        .unwrap();
    memory
        .call(
            source,
            DeleteObservations::new(&[deletions("Alice", &[2, 4]), deletions("Bob", &[1])]),
        )
        .await
        .unwrap();
    memory
        .call(
            source,
            ReplaceObservation::new("Alice", crate::Ordinal(3), "three, revised"),
        )
        .await
        .unwrap();
    create_relations(
        &memory,
        source,
        &[("Alice", "knows", "Bob"), ("Zed", "near", "Zed")],
    )
    .await;
    let (nodes, relations) = export_all(&memory, source, 2).await;
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0].next_ordinal, Some(5));

    let copy = memory.create_workspace("copy").await.unwrap().id;
    let outcome = memory
        .import(copy, batch(nodes.clone(), &relations))
        .await
        .unwrap();
    assert_eq!((outcome.nodes_created, outcome.relations_created), (3, 2));
    assert_eq!(export_all(&memory, copy, 2).await, (nodes, relations));

    // The ordinal counter came along: deleted ordinals are not handed out again.
    let added = memory
        .call(
            copy,
            AddObservations::new(&[additions("Alice", &["five"]), additions("Bob", &["again"])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added, observations(&[(5, "five")]));
    assert_eq!(added[1].added, observations(&[(2, "again")]));
    // And the imported text is searchable.
    let found = memory
        .call(
            copy,
            SearchNodes::new("revised").limit(5).mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert_eq!(found.results[0].name, "Alice");
}
