//! A database written by the schema before memory over time (V9) opens with nothing lost:
//! facts, relations and events as they were, each fact and relation holding since it was
//! created, and every new tool working on it.

use std::sync::Arc;

use engram_domain::testsuite::strings;
use engram_domain::*;
use engram_sqlite::SqliteStore;
use rusqlite::functions::FunctionFlags;

/// The rows an older build wrote, with the SQL functions its triggers call.
fn write_as_version_9(path: &std::path::Path) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.create_scalar_function("engram_now", 0, FunctionFlags::SQLITE_UTF8, |_| {
        Ok(1_767_225_600_000_000_i64) // 2026-01-01T00:00:00Z
    })
    .unwrap();
    db.create_scalar_function(
        "engram_name_words",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let name: String = ctx.get(0)?;
            let words: Vec<String> = (name.to_lowercase())
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect();
            Ok(serde_json::to_string(&words).unwrap())
        },
    )
    .unwrap();
    db.execute_batch(
        "INSERT INTO workspaces (id, name, created_at) VALUES (1, 'old', 1767225600000000);
         INSERT INTO nodes (id, workspace_id, name, entity_type, tags, next_ordinal, created_at,
                            updated_at)
         VALUES (1, 1, 'Alice', 'person', '[\"team\"]', 3, 1767225600000000, 1767225600000000),
                (2, 1, 'Acme', 'company', '[]', 1, 1767225600000000, 1767225600000000);
         INSERT INTO observations (node_id, workspace_id, ordinal, content, created_at, updated_at)
         VALUES (1, 1, 1, 'likes tea', 1767225600000000, 1767225600000000),
                (1, 1, 2, 'works on storage', 1767225600000000, 1767225600000000);
         INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type, created_at)
         VALUES (1, 1, 2, 'works_at', 1767225600000000);",
    )
    .unwrap();
}

#[tokio::test]
async fn a_database_of_the_schema_before_opens_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    drop(SqliteStore::open_at_version(&path, 9).await.unwrap());
    write_as_version_9(&path);

    let memory = Memory::new(Arc::new(SqliteStore::open(&path).await.unwrap()));
    let ws = memory.workspace("old").await.unwrap().id;
    let january = "2026-01-01T00:00:00Z".parse::<Timestamp>().unwrap();
    let names = strings(&["Alice"]);
    let now = memory.call(ws, OpenNodes::new(&names)).await.unwrap();
    let alice = &now.entities[0];
    let texts: Vec<&str> = alice
        .observations
        .iter()
        .map(|o| o.content.as_str())
        .collect();
    assert_eq!(texts, ["likes tea", "works on storage"]);
    assert_eq!(alice.tags, ["team"]);
    assert_eq!(now.relations, [Relation::new("Alice", "Acme", "works_at")]);
    // Everything held since it was written.
    let ever = (memory.call(ws, OpenNodes::new(&names).at(ReadTime::Ever)))
        .await
        .unwrap();
    assert!(
        ever.entities[0]
            .observations
            .iter()
            .all(|o| o.valid_from == Some(january))
    );
    assert_eq!(ever.relations[0].valid_from, Some(january));
    // The new tools work on it.
    let ended = memory
        .call(
            ws,
            EndRelations::new(&[RelationSpec::new("Alice", "Acme", "works_at")]),
        )
        .await
        .unwrap();
    assert_eq!(ended.ended.len(), 1);
    let history = memory.call(ws, GetHistory::new("Alice")).await.unwrap();
    let operations: Vec<HistoryOperation> = history.events.iter().map(|e| e.operation).collect();
    assert!(
        operations.contains(&HistoryOperation::RelationEnded),
        "{history:?}"
    );
    assert!(
        operations.contains(&HistoryOperation::Created),
        "{history:?}"
    );
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!((stats.node_count, stats.observation_count), (2, 2));
}
