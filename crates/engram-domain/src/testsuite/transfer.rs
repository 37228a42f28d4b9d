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
                    .cursor(cursor.clone())
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
                .entity_type(Some("late".into())),
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
                .cursor(Some("e".into()))
                .limit(2)
                .entity_type(Some("late".into())),
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

/// A memory with each of its times (a fact held since before it was written, an ended fact, an
/// expiring one, an ended relation, an alias) exported as `engram export` reads it and imported
/// into an empty workspace reads the same there: now, with what ended, as it was at a past
/// time, by its alias, and in its history with who wrote each fact. A second import adds
/// nothing.
pub async fn an_export_keeps_memory_over_time(store: Arc<dyn MemoryStore>) {
    use crate::{
        EndObservations, EndRelations, GetHistory, NewFact, ObservationEndings, ReadTime,
        SetAliases,
    };
    use chrono::SubsecRound;
    let memory = Memory::new(store);
    let source = memory.create_workspace("source").await.unwrap().id;
    let now = chrono::Utc::now().trunc_subsecs(0);
    let days_ago = |days: i64| now - chrono::Duration::days(days);
    let fact = |content: &str, valid_from, expires_at| NewFact {
        content: content.into(),
        valid_from,
        expires_at,
    };
    let alice = NewNode {
        observations: vec![
            fact("lived in Lisbon", Some(days_ago(40)), None),
            fact("likes tea", Some(days_ago(30)), None),
            fact(
                "on call this week",
                None,
                Some(now + chrono::Duration::days(2)),
            ),
            "works from home".into(),
        ],
        ..entity("Alice", "person", &[])
    };
    let nodes = vec![
        alice,
        // Nothing but an ended relation: no write of the import touches it.
        entity("Bob", "person", &[]),
        entity("engram", "project", &[]),
    ];
    let mut knows = relation("Alice", "knows", "Bob");
    knows.valid_from = Some(days_ago(40));
    crate::authorship::scope("alice", async {
        memory
            .call(source, CreateEntities::new(nodes))
            .await
            .unwrap();
        let relations = [knows, relation("Alice", "works_on", "engram")];
        memory
            .call(source, CreateRelations::new(&relations))
            .await
            .unwrap();
        let lisbon = ObservationEndings {
            entity_name: "Alice".into(),
            ordinals: vec![crate::Ordinal(1)],
        };
        let ended = EndObservations::new(&[lisbon]).ended_at(days_ago(10));
        memory.call(source, ended).await.unwrap();
        let ended = EndRelations::new(&[relation("Alice", "knows", "Bob")]).ended_at(days_ago(5));
        memory.call(source, ended).await.unwrap();
        let aliases = SetAliases::new("Alice", &strings(&["Ally"]));
        memory.call(source, aliases).await.unwrap();
    })
    .await;

    let (nodes, relations) = export_all(&memory, source, 2).await;
    let alice = &nodes[0];
    assert_eq!(alice.aliases, ["Ally"]);
    assert_eq!(alice.observations.len(), 4, "the ended fact too: {alice:?}");
    assert_eq!(alice.observations[0].valid_to, Some(days_ago(10)));
    assert_eq!(alice.observations[1].valid_from, Some(days_ago(30)));
    assert!(alice.observations[2].expires_at.is_some());
    assert_eq!(alice.observations[3].author.as_deref(), Some("alice"));
    assert_eq!(relations.len(), 2, "the ended relation too: {relations:?}");

    let copy = memory.create_workspace("copy").await.unwrap().id;
    let outcome = memory
        .import(copy, batch(nodes.clone(), &relations))
        .await
        .unwrap();
    assert_eq!(
        (
            outcome.nodes_created,
            outcome.observations_added,
            outcome.relations_created,
            outcome.aliases_set
        ),
        (3, 4, 2, 1),
        "{outcome:?}"
    );
    let names = strings(&["Alice", "Bob", "engram"]);
    for time in [ReadTime::Now, ReadTime::Ever, ReadTime::At(days_ago(20))] {
        let read = |workspace| memory.call(workspace, OpenNodes::new(&names).at(time));
        let (original, imported) = (read(source).await.unwrap(), read(copy).await.unwrap());
        assert_eq!(imported, original, "{time:?}");
    }
    // What those reads hold: the fact that held then, the relation that ended since.
    let then = memory
        .call(copy, OpenNodes::new(&names).at(ReadTime::At(days_ago(20))))
        .await
        .unwrap();
    let texts: Vec<&str> = (then.entities[0].observations.iter())
        .map(|o| o.content.as_str())
        .collect();
    assert_eq!(texts, ["lived in Lisbon", "likes tea"]);
    assert!(
        (then.relations.iter()).any(|r| r.relation_type == "knows"),
        "{then:?}"
    );
    let current = open_node(&memory, copy, "Alice").await;
    let texts: Vec<&str> = (current.observations.iter())
        .map(|o| o.content.as_str())
        .collect();
    assert_eq!(texts, ["likes tea", "on call this week", "works from home"]);
    assert!(
        current.observations[1].valid_to.is_some(),
        "it still expires"
    );
    // The old name still answers.
    let ally = |workspace| memory.call(workspace, OpenNodes::new(&strings(&["Ally"])));
    let (original, imported) = (ally(source).await.unwrap(), ally(copy).await.unwrap());
    assert_eq!(imported.entities[0].name, "Alice");
    assert_eq!(imported, original);
    // The facts' history, with who wrote them (relations' authors are not carried).
    let memory = &memory;
    let history = |workspace| async move {
        let history = memory.call(workspace, GetHistory::new("Alice")).await;
        let mut events = history.unwrap().events;
        events.retain(|entry| entry.relation.is_none());
        events
    };
    let (original, imported) = (history(source).await, history(copy).await);
    assert_eq!(imported, original);
    assert!(
        (imported.iter()).any(|entry| entry.author.as_deref() == Some("alice")),
        "{imported:?}"
    );
    assert_eq!(
        export_all(memory, copy, 2).await,
        (nodes.clone(), relations.clone())
    );

    // Once more: everything is there already, the ended fact and relation included.
    let again = memory
        .import(copy, batch(nodes.clone(), &relations))
        .await
        .unwrap();
    assert_eq!(
        (
            again.observations_added,
            again.relations_created,
            again.aliases_set
        ),
        (0, 0, 0),
        "{again:?}"
    );
    assert_eq!(
        (
            again.observations_existing,
            again.relations_existing,
            again.aliases_existing
        ),
        (4, 2, 1),
        "{again:?}"
    );
    assert_eq!(export_all(memory, copy, 2).await, (nodes, relations));
}

/// An imported alias that another node holds, as its name or as an alias, is not set and comes
/// back with its holder; the rest of the record is imported.
pub async fn an_imported_alias_another_node_holds_is_refused(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["Alice", "Bob"]).await;
    memory
        .call(ws, crate::SetAliases::new("Alice", &strings(&["Ally"])))
        .await
        .unwrap();
    let mut carol = record("Carol", "person", &["new here"]);
    carol.aliases = strings(&["Bob", "Ally", "Caz"]);
    let outcome = memory.import(ws, batch(vec![carol], &[])).await.unwrap();
    let refused: Vec<(&str, &str)> = (outcome.aliases_refused.iter())
        .map(|r| (r.alias.as_str(), r.holder.as_str()))
        .collect();
    assert_eq!(refused, [("Bob", "Bob"), ("Ally", "Alice")]);
    assert_eq!((outcome.nodes_created, outcome.aliases_set), (1, 1));
    assert_eq!(open_node(&memory, ws, "Ally").await.name, "Alice");
    assert_eq!(open_node(&memory, ws, "Bob").await.name, "Bob");
    let carol = open_node(&memory, ws, "Caz").await;
    assert_eq!(
        (carol.name.as_str(), carol.aliases.clone()),
        ("Carol", strings(&["Caz"]))
    );
}

/// A record, or a relation's end, named by another node's alias is that node, as
/// `create_entities` reads it: the import adds to it and makes no second node under a name an
/// alias stands for (issue 60).
pub async fn an_imported_record_named_by_an_alias_is_that_node(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["PostgreSQL", "engram"]).await;
    memory
        .call(
            ws,
            crate::SetAliases::new("PostgreSQL", &strings(&["Postgres"])),
        )
        .await
        .unwrap();
    let postgres = record("Postgres", "database", &["listens on 5432"]);
    let uses = link("engram", "uses", "Postgres");
    let outcome = memory
        .import(ws, batch(vec![postgres], &[uses]))
        .await
        .unwrap();
    assert_eq!(
        (outcome.nodes_created, outcome.nodes_existing),
        (0, 1),
        "{outcome:?}"
    );
    let node = open_node(&memory, ws, "Postgres").await;
    assert_eq!(node.name, "PostgreSQL");
    let texts: Vec<&str> = node
        .observations
        .iter()
        .map(|o| o.content.as_str())
        .collect();
    assert!(texts.contains(&"listens on 5432"), "{texts:?}");
    let names = [String::from("engram")];
    let opened = memory.call(ws, OpenNodes::new(&names)).await.unwrap();
    let relations: Vec<(&str, &str)> = (opened.relations.iter())
        .map(|r| (r.from.as_str(), r.to.as_str()))
        .collect();
    assert_eq!(relations, [("engram", "PostgreSQL")]);
}
