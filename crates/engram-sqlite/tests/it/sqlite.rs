//! SQLite-specific checks beyond the conformance suite: the file, the migrations, what the
//! triggers leave behind in the `vec0` and FTS5 tables, and write-ahead logging.

use engram_domain::{CreateEntities, DeleteEntities, DeleteWorkspace, GetStats, OpenNodes};
use std::sync::Arc;

use engram_domain::perspectives::{Perspective, render_document};
use engram_domain::testsuite::{
    deletions, entity, memory_with_every_perspective, memory_with_workspace, strings,
};
use engram_domain::{
    AddObservations, DeleteObservations, EmbeddingRecord, Error, MemoryStore, ModelEmbeddings,
    Ordinal, ReplaceObservation, SaveEmbeddings, WorkspaceStore, text_hash,
};
use engram_sqlite::SqliteStore;
use rusqlite::Connection;

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/sqlite_quickstart.rs"]
mod sqlite_quickstart;

#[tokio::test]
async fn the_library_example_runs() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let opened = sqlite_quickstart::run(&dir.path().join("quickstart.db"), "quickstart")
        .await
        .unwrap();
    assert!(
        opened.contains(r#""content": "moved to Lisbon in March""#),
        "{opened}"
    );
    assert!(
        opened.contains(r#""relation_type": "works_on""#),
        "{opened}"
    );
}

#[tokio::test]
async fn migrations_are_current_and_idempotent() {
    let store = crate::open_fresh().await;
    assert!(store.is_migrated().await.unwrap());
    assert!(store.migrate().await.unwrap().is_empty());
    assert!(store.schema_current().await.unwrap());
    let reopened = SqliteStore::open(store.path()).await.unwrap();
    assert!(reopened.is_migrated().await.unwrap());
}

#[tokio::test]
async fn open_creates_missing_directories_and_refuses_other_files() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let nested = dir.path().join("a/b/engram.db");
    let store = SqliteStore::open(&nested).await.unwrap();
    assert!(nested.is_file());
    drop(store);

    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database, but long enough to have a header: ".repeat(20),
    )
    .unwrap();
    let error = SqliteStore::open(&text).await.unwrap_err();
    assert!(matches!(error, Error::Internal(_)), "{error}");
}

/// Observation vectors of every dimension are in `embeddings` and in their `vec0` table, and
/// nowhere else; the full-text index matches `observations`.
pub(crate) fn assert_consistent(db: &Connection, step: &str) {
    let mut statement = db
        .prepare(
            "SELECT name FROM sqlite_master
             WHERE name GLOB 'vec_obs_*' AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        )
        .unwrap();
    let tables: Vec<String> = statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(tables, ["vec_obs_3", "vec_obs_4"], "{step}");
    for table in tables {
        let dims: i64 = table["vec_obs_".len()..].parse().unwrap();
        let in_index: i64 = db
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        let stored: i64 = db
            .query_row(
                "SELECT count(*) FROM embeddings WHERE dims = ?1",
                [dims],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(in_index, stored, "{step}: {table}");
        let matched: i64 = db
            .query_row(
                &format!("SELECT count(*) FROM {table} v JOIN embeddings e ON e.id = v.rowid"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(matched, stored, "{step}: {table}");
    }
    db.execute(
        "INSERT INTO observations_fts (observations_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap_or_else(|e| panic!("{step}: full-text index out of step: {e}"));
}

pub(crate) fn count(db: &Connection, sql: &str) -> i64 {
    db.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Saves a vector of `dims` ones for every pending task of `model`.
pub(crate) async fn index(store: &Arc<dyn MemoryStore>, model: &str, dims: usize) -> usize {
    let tasks = store
        .pending_embeddings(engram_domain::PendingEmbeddings {
            model,
            limit: 1_000,
            cursor: &Default::default(),
        })
        .await
        .unwrap();
    let records: Vec<EmbeddingRecord> = tasks
        .iter()
        .map(|task| EmbeddingRecord {
            observation_id: task.observation_id,
            perspective_id: task.perspective_id,
            text_hash: text_hash(&render_document(&task.document_template, &task.context)),
            source_updated_at: task.source_updated_at,
            vector: Some(vec![1.0; dims]),
            token_signs: None,
        })
        .collect();
    store
        .save_embeddings(SaveEmbeddings {
            model,
            records: &records,
        })
        .await
        .unwrap();
    records.len()
}

#[tokio::test]
async fn deletions_leave_no_vector_behind() {
    let sqlite = crate::open_fresh().await;
    let db = Connection::open(sqlite.path()).unwrap();
    let store: Arc<dyn MemoryStore> = Arc::new(sqlite);
    let (memory, ws) = memory_with_every_perspective(store.clone(), "w").await;
    let (other_memory, other) = memory_with_every_perspective(store.clone(), "other").await;
    for (memory, ws) in [(&memory, ws), (&other_memory, other)] {
        memory
            .call(
                ws,
                CreateEntities::new(vec![
                    entity("A", "thing", &["a1", "a2", "a3"]),
                    entity("B", "thing", &["b1"]),
                    entity("C", "thing", &["c1"]),
                ]),
            )
            .await
            .unwrap();
    }
    assert_eq!(index(&store, "three", 3).await, 50);
    assert_eq!(index(&store, "four", 4).await, 50);
    assert_consistent(&db, "indexed");
    assert_eq!(count(&db, "SELECT count(*) FROM vec_obs_3"), 50);

    // Re-embedding replaces vectors in place (all of A's: its `updated_at` moved).
    memory
        .call(ws, ReplaceObservation::new("A", Ordinal(1), "a1, revised"))
        .await
        .unwrap();
    assert_eq!(index(&store, "three", 3).await, 15);
    assert_consistent(&db, "re-embedded");
    assert_eq!(count(&db, "SELECT count(*) FROM vec_obs_3"), 50);

    memory
        .call(ws, DeleteObservations::new(&[deletions("A", &[2])]))
        .await
        .unwrap();
    assert_consistent(&db, "observation deleted");
    memory
        .call(ws, DeleteEntities::new(&strings(&["B"])))
        .await
        .unwrap();
    assert_consistent(&db, "node deleted");
    let general = store
        .perspectives(ws)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == "general")
        .unwrap();
    let changed = Perspective {
        document_template: "{observation}".into(),
        ..general
    };
    memory.set_perspective(ws, &changed).await.unwrap();
    assert_consistent(&db, "template changed");
    assert_eq!(
        store
            .clear_embeddings(ModelEmbeddings {
                workspace: ws,
                model: "four"
            })
            .await
            .unwrap(),
        12
    );
    assert_consistent(&db, "cleared");
    memory
        .delete_workspace(DeleteWorkspace::new("w", true))
        .await
        .unwrap();
    assert_consistent(&db, "workspace deleted");
    // Only the other workspace is left, whole.
    assert_eq!(count(&db, "SELECT count(*) FROM vec_obs_3"), 25);
    assert_eq!(count(&db, "SELECT count(*) FROM vec_obs_4"), 25);
    let events_elsewhere = "SELECT count(*) FROM events
                            WHERE workspace_id NOT IN (SELECT id FROM workspaces)";
    assert_eq!(count(&db, events_elsewhere), 0);
    assert!(count(&db, "SELECT count(*) FROM events") > 0);
    assert_eq!(
        count(&db, "SELECT count(*) FROM node_embeddings"),
        3 * 5 * 2
    );
}

#[tokio::test]
async fn reads_go_on_while_another_connection_writes() {
    let sqlite = crate::open_fresh().await;
    let writer = Connection::open(sqlite.path()).unwrap();
    let store: Arc<dyn MemoryStore> = Arc::new(sqlite);
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    memory
        .call(ws, CreateEntities::new(vec![entity("A", "thing", &["a1"])]))
        .await
        .unwrap();
    // Another process holds the write lock with an uncommitted change: readers see the last
    // committed state and do not wait (write-ahead logging).
    writer
        .execute_batch("BEGIN IMMEDIATE; DELETE FROM perspectives;")
        .unwrap();
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["A"])))
        .await
        .unwrap();
    assert_eq!(opened.entities.len(), 1);
    assert_eq!(store.perspectives(ws).await.unwrap().len(), 5);
    writer.execute_batch("ROLLBACK").unwrap();
    assert_eq!(store.perspectives(ws).await.unwrap().len(), 5);
}

#[tokio::test]
async fn a_call_held_up_past_its_time_limit_fails_and_changes_nothing() {
    use std::time::{Duration, Instant};
    let store = crate::open_fresh()
        .await
        .with_call_timeout(Duration::from_millis(300));
    let (memory, workspace) = memory_with_workspace(Arc::new(store.clone()), "limits").await;
    memory
        .call(
            workspace,
            CreateEntities::new(vec![entity("Ada", "person", &["first"])]),
        )
        .await
        .unwrap();

    // Another process takes the database's write lock and keeps it.
    let other = Connection::open(store.path()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = Instant::now();
    let written = memory
        .call(
            workspace,
            CreateEntities::new(vec![entity("Grace", "person", &["second"])]),
        )
        .await;
    engram_domain::testsuite::assert_gave_up_in_time(started, written);
    other.execute_batch("ROLLBACK").unwrap();

    // Nothing was written, and the same call succeeds once the lock is gone.
    let stats = memory.call(workspace, GetStats {}).await.unwrap();
    assert_eq!((stats.node_count, stats.observation_count), (1, 1));
    memory
        .call(
            workspace,
            CreateEntities::new(vec![entity("Grace", "person", &["second"])]),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn text_search_leaves_out_words_most_observations_contain() {
    let store = crate::open_fresh().await;
    engram_domain::testsuite::common_words_are_left_out_of_text_queries(
        Arc::new(store),
        || async {},
    )
    .await;
}

#[tokio::test]
async fn text_search_finds_rare_words_beside_frequent_ones() {
    let store = crate::open_fresh().await;
    engram_domain::testsuite::rare_words_are_found_beside_frequent_ones(
        Arc::new(store),
        || async {},
    )
    .await;
}

#[tokio::test]
async fn text_ranking_weighs_words_by_rarity() {
    let store = crate::open_fresh().await;
    engram_domain::testsuite::rare_words_outrank_common_ones(Arc::new(store), || async {}).await;
}

/// A call's observations go to SQLite in one statement per 8 MiB of their JSON: 300 texts of
/// 60 KB, whose control characters JSON escapes sixfold (over 100 MB of JSON), are all stored
/// in order, searchable, with one creation event per node.
#[tokio::test]
async fn a_large_call_of_escaped_texts_is_stored_whole() {
    let sqlite = crate::open_fresh().await;
    let db = Connection::open(sqlite.path()).unwrap();
    let store: Arc<dyn MemoryStore> = Arc::new(sqlite);
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let texts: Vec<String> = (0..300)
        .map(|i| format!("text{i} {}", "\u{1}".repeat(60_000)))
        .collect();
    let contents: Vec<&str> = texts.iter().map(String::as_str).collect();
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("A", "thing", &contents[..150])]),
        )
        .await
        .unwrap();
    let added = memory
        .call(
            ws,
            AddObservations::new(&[engram_domain::ObservationAdditions {
                entity_name: "A".into(),
                contents: texts[150..].iter().cloned().map(Into::into).collect(),
            }]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added.len(), 150);
    let stored: Vec<(i64, String)> = db
        .prepare("SELECT ordinal, substr(content, 1, 8) FROM observations ORDER BY id")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored.len(), 300);
    for (i, (ordinal, start)) in stored.iter().enumerate() {
        assert_eq!(*ordinal, i as i64 + 1);
        assert!(start.starts_with(&format!("text{i}")), "{i}: {start:?}");
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM observations_fts WHERE observations_fts MATCH 'text299'"
        ),
        1
    );
    // One event per call (one node each), counting every text.
    let events = "FROM events WHERE subject = 'observation' AND operation = 'create'";
    assert_eq!(count(&db, &format!("SELECT count(*) {events}")), 2);
    assert_eq!(count(&db, &format!("SELECT sum(count) {events}")), 300);
}
