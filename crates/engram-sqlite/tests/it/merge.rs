//! SQLite-specific checks of `merge_entities` beyond the conformance suite: what the row
//! triggers leave behind when facts and relations change nodes, and names that reach the
//! store as one node twice (an alias renamed to its node's name by the domain).

use std::sync::Arc;

use engram_domain::testsuite::{
    counts, entity, memory_with_every_perspective, memory_with_workspace, open_node, relation,
    strings,
};
use engram_domain::{
    CreateEntities, CreateRelations, EndRelations, Error, Memory, MemoryStore, MergeEntities,
    OpenNodes, ReadTime, SetAliases, WorkspaceId,
};
use rusqlite::Connection;

use crate::sqlite::{assert_consistent, count, index};

/// `A` (alias `a`) and `B` (alias `b`), each with a fact `shared`, and `C`.
async fn three_nodes(memory: &Memory, ws: WorkspaceId) {
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("A", "thing", &["a1", "shared"]),
                entity("B", "thing", &["b1", "shared"]),
                entity("C", "thing", &[]),
            ]),
        )
        .await
        .unwrap();
    for (node, alias) in [("A", "a"), ("B", "b")] {
        memory
            .call(ws, SetAliases::new(node, &strings(&[alias])))
            .await
            .unwrap();
    }
}

#[track_caller]
fn assert_invalid<T: std::fmt::Debug>(result: engram_domain::Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: actual, .. }) => assert_eq!(actual, field),
        other => panic!("expected invalid argument `{field}`, got {other:?}"),
    }
}

#[tokio::test]
async fn a_merge_of_a_node_into_itself_through_an_alias_is_refused() {
    let (memory, ws) = memory_with_workspace(crate::fresh_store().await, "w").await;
    three_nodes(&memory, ws).await;
    let (a, b) = (
        open_node(&memory, ws, "A").await,
        open_node(&memory, ws, "B").await,
    );
    // The domain renames the alias to its node's name and asks the store again: the target
    // (or one node) twice, which the store must not take for two nodes.
    let into_itself = [(&["a"][..], "A"), (&["A"][..], "a"), (&["B", "b"][..], "A")];
    for (sources, target) in into_itself {
        let merged = memory
            .call(ws, MergeEntities::new(&strings(sources), target))
            .await;
        assert_invalid(merged, &format!("sources[{}]", sources.len() - 1));
    }
    assert_eq!(open_node(&memory, ws, "A").await, a);
    assert_eq!(open_node(&memory, ws, "B").await, b);
}

#[tokio::test]
async fn merged_facts_keep_their_vectors_and_index_entries() {
    let sqlite = crate::open_fresh().await;
    let db = Connection::open(sqlite.path()).unwrap();
    let store: Arc<dyn MemoryStore> = Arc::new(sqlite);
    let (memory, ws) = memory_with_every_perspective(store.clone(), "w").await;
    three_nodes(&memory, ws).await;
    let relations = [relation("B", "uses", "C"), relation("C", "knows", "B")];
    memory
        .call(ws, CreateRelations::new(&relations))
        .await
        .unwrap();
    memory
        .call(ws, EndRelations::new(&relations[..1]))
        .await
        .unwrap();
    index(&store, "three", 3).await;
    index(&store, "four", 4).await;
    let fact = |text: &str| {
        format!(
            "SELECT o.id FROM observations o JOIN nodes n ON n.id = o.node_id
             WHERE n.name = 'B' AND o.content = '{text}'"
        )
    };
    let (b1, duplicate) = (count(&db, &fact("b1")), count(&db, &fact("shared")));
    let vectors = |id: i64| {
        count(
            &db,
            &format!("SELECT count(*) FROM embeddings WHERE observation_id = {id}"),
        )
    };
    let (b1_vectors, all_vectors) = (vectors(b1), count(&db, "SELECT count(*) FROM embeddings"));
    assert!(b1_vectors > 0);
    let dropped_vectors = vectors(duplicate);
    let b = count(&db, "SELECT id FROM nodes WHERE name = 'B'");

    // Through the target's alias: the domain asks again by its name.
    let merged = memory
        .call(ws, MergeEntities::new(&strings(&["B"]), "a"))
        .await
        .unwrap();
    assert_eq!(merged.aliases, ["B", "a", "b"]);
    assert_consistent(&db, "merged");
    // The moved fact kept its row, so its vectors and its full-text entry, now under A.
    assert_eq!(vectors(b1), b1_vectors);
    assert_eq!(vectors(duplicate), 0);
    assert_eq!(
        count(&db, "SELECT count(*) FROM embeddings"),
        all_vectors - dropped_vectors
    );
    let found = "SELECT n.name = 'A' FROM observations_fts f
                 JOIN observations o ON o.id = f.rowid JOIN nodes n ON n.id = o.node_id
                 WHERE observations_fts MATCH 'b1'";
    assert_eq!(count(&db, found), 1);
    let left = format!("SELECT count(*) FROM node_embeddings WHERE node_id = {b}");
    assert_eq!(count(&db, &left), 0);
    // The kept counts moved with the rows: A, C; a1, shared, b1; C knows A.
    assert_eq!(counts(&memory, ws).await, (2, 3, 1));
    // The ended relation moved to the target too.
    let ever = memory
        .call(ws, OpenNodes::new(&strings(&["A"])).at(ReadTime::Ever))
        .await
        .unwrap();
    let named: Vec<(&str, &str, &str, bool)> = (ever.relations.iter())
        .map(|r| {
            let ended = r.valid_to.is_some();
            (
                r.from.as_str(),
                r.relation_type.as_str(),
                r.to.as_str(),
                ended,
            )
        })
        .collect();
    assert_eq!(
        named,
        [("A", "uses", "C", true), ("C", "knows", "A", false)]
    );
}
