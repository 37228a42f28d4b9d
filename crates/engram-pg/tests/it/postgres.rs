//! PostgreSQL-specific checks beyond the conformance suite.

use engram_domain::GetStats;
use engram_domain::{AddObservations, CreateRelations, DeleteObservations, DeleteRelations};
use engram_domain::{CreateEntities, DeleteEntities, DeleteWorkspace};
use engram_pg::PgStore;

use engram_pg::testing::fresh_database;

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/writers.rs"]
mod writers;

#[tokio::test]
async fn the_library_example_runs() {
    // Eight writers of five observations at once: forty ordinals, none taken twice, none
    // skipped.
    let ordinals = writers::run(&fresh_database().await, "writers")
        .await
        .unwrap();
    assert_eq!(ordinals, (1..=40).collect::<Vec<i64>>());
}

#[tokio::test]
async fn migrations_are_current_and_idempotent() {
    let store = PgStore::connect(&fresh_database().await).await.unwrap();
    assert!(store.is_migrated().await.unwrap());
    // The template was migrated already: a second run applies nothing.
    assert!(store.migrate().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_databases_cjk_pairs_are_the_domains() {
    // Full text indexes observations through the SQL function and searches queries through
    // it: it must write what `with_cjk_bigrams` writes, or a query would miss its text.
    let store = PgStore::connect(&fresh_database().await).await.unwrap();
    let client = store.pool().get().await.unwrap();
    for text in [
        "plain English, no pairs",
        "田中さんは東京に住んでいます",
        "Alice 在北京, 猫. カタカナ",
        "서울 날씨가 좋다",
        "一",
        "人々・ビル 𠀋𠀋",
        "",
    ] {
        let sql: String = (client
            .query_one("SELECT engram_with_cjk($1)", &[&text])
            .await)
            .unwrap()
            .get(0);
        assert_eq!(
            sql,
            engram_domain::search::words::with_cjk_bigrams(text),
            "{text}"
        );
    }
}

#[tokio::test]
async fn pgvector_is_installed_in_a_supported_version() {
    let store = PgStore::connect(&fresh_database().await).await.unwrap();
    let client = store.pool().get().await.unwrap();
    let version: String = client
        .query_one(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(parts >= vec![0, 7], "pgvector {version} is older than 0.7");
}

#[tokio::test]
async fn a_call_held_up_past_its_time_limit_fails_and_changes_nothing() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use engram_domain::testsuite::{entity, memory_with_workspace};

    let url = fresh_database().await;
    let store = PgStore::connect_with_limits(&url, 4, Duration::from_millis(300))
        .await
        .unwrap();
    let (memory, workspace) = memory_with_workspace(Arc::new(store.clone()), "limits").await;
    memory
        .call(
            workspace,
            CreateEntities::new(vec![entity("Ada", "person", &["first"])]),
        )
        .await
        .unwrap();

    // Another session locks Ada's row and keeps it: adding to Ada waits for that lock.
    let (mut other, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let holding = other.transaction().await.unwrap();
    holding
        .execute("SELECT id FROM nodes WHERE name = 'Ada' FOR UPDATE", &[])
        .await
        .unwrap();
    let started = Instant::now();
    let additions = [engram_domain::ObservationAdditions {
        entity_name: "Ada".into(),
        contents: vec!["second".into()],
    }];
    let written = memory
        .call(workspace, AddObservations::new(&additions))
        .await;
    engram_domain::testsuite::assert_gave_up_in_time(started, written);
    holding.rollback().await.unwrap();

    // Nothing was written, and the same call succeeds once the lock is gone.
    let stats = memory.call(workspace, GetStats {}).await.unwrap();
    assert_eq!(stats.observation_count, 1);
    memory
        .call(workspace, AddObservations::new(&additions))
        .await
        .unwrap();
    assert_eq!(
        memory
            .call(workspace, GetStats {})
            .await
            .unwrap()
            .observation_count,
        2
    );
}

#[tokio::test]
async fn bulk_writes_bring_the_planner_statistics_up_to_date() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use engram_domain::testsuite::{entity, memory_with_workspace};

    let url = fresh_database().await;
    let store = PgStore::connect(&url).await.unwrap();
    let (memory, workspace) = memory_with_workspace(Arc::new(store.clone()), "bulk").await;
    let last_analyze = || async {
        let client = store.pool().get().await.unwrap();
        let row = client
            .query_one(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'observations'",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, Option<std::time::SystemTime>>(0)
    };
    let analyzed_after = async |earlier: Option<std::time::SystemTime>, rows: usize| {
        let started = Instant::now();
        loop {
            let last = last_analyze().await;
            if last.is_some() && last > earlier {
                return last;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the tables were not analyzed after {rows} rows"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert!(last_analyze().await.is_none(), "analyzed before any write");
    // Two bursts of 2,100 rows (100 nodes of 20 observations, in calls of 1,000
    // observations). The first is a first import: the tables were never analyzed. The second
    // changes them by more than a fifth.
    let facts: Vec<String> = (0..20).map(|i| format!("fact {i}")).collect();
    let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
    let mut last = None;
    for burst in 0..2 {
        for call in 0..2 {
            let entities = (0..50)
                .map(|i| entity(&format!("n{burst}-{call}-{i}"), "thing", &facts))
                .collect();
            memory
                .call(workspace, CreateEntities::new(entities))
                .await
                .unwrap();
        }
        last = analyzed_after(last, 2_100 * (burst + 1)).await;
        // The statistics views take the analysis and the next writes' counts in turn.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
    }
}

#[tokio::test]
async fn kept_counts_match_the_tables_under_concurrent_writes_deletes_and_folds() {
    use std::sync::Arc;

    use engram_domain::testsuite::{deletions, entity, relation};

    let url = fresh_database().await;
    let store = PgStore::connect(&url).await.unwrap();
    let memory = Arc::new(engram_domain::Memory::new(Arc::new(store.clone())));
    let a = memory.create_workspace("a").await.unwrap().id;
    let b = memory.create_workspace("b").await.unwrap().id;
    // Four writers, two per workspace, each 25 rounds of: 20 nodes of 5 observations, 10
    // relations, 3 nodes deleted (their observations and relations go with them), 2
    // observations of 2 nodes deleted, 2 relations deleted. 3,000+ rows each, so the
    // background folds run in the middle of the writes.
    let writers = (0..4).map(|writer| {
        let memory = memory.clone();
        let workspace = if writer % 2 == 0 { a } else { b };
        tokio::spawn(async move {
            for round in 0..25 {
                let name = |i: usize| format!("w{writer}-r{round}-n{i}");
                let facts = ["one", "two", "three", "four", "five"];
                let nodes = (0..20).map(|i| entity(&name(i), "thing", &facts)).collect();
                memory
                    .call(workspace, CreateEntities::new(nodes))
                    .await
                    .unwrap();
                let links: Vec<_> = (0..10)
                    .map(|i| relation(&name(i), "links", &name(i + 10)))
                    .collect();
                memory
                    .call(workspace, CreateRelations::new(&links))
                    .await
                    .unwrap();
                let gone: Vec<String> = [0, 11, 19].map(name).into();
                memory
                    .call(workspace, DeleteEntities::new(&gone))
                    .await
                    .unwrap();
                let trimmed = [deletions(&name(2), &[1, 2]), deletions(&name(3), &[5])];
                memory
                    .call(workspace, DeleteObservations::new(&trimmed))
                    .await
                    .unwrap();
                let unlinked = [relation(&name(4), "links", &name(14))];
                memory
                    .call(workspace, DeleteRelations::new(&unlinked))
                    .await
                    .unwrap();
            }
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap();
    }
    let client = store.pool().get().await.unwrap();
    let counted = |workspace: engram_domain::WorkspaceId| {
        let client = &client;
        async move {
            let row = client
                .query_one(
                    "SELECT (SELECT count(*) FROM nodes WHERE workspace_id = $1),
                            (SELECT count(*) FROM observations WHERE workspace_id = $1),
                            (SELECT count(*) FROM relations WHERE workspace_id = $1)",
                    &[&workspace.0],
                )
                .await
                .unwrap();
            (
                row.get::<_, i64>(0),
                row.get::<_, i64>(1),
                row.get::<_, i64>(2),
            )
        }
    };
    for workspace in [a, b] {
        let stats = memory.call(workspace, GetStats {}).await.unwrap();
        let kept = (
            stats.node_count as i64,
            stats.observation_count as i64,
            stats.relation_count as i64,
        );
        // Per writer and round: 17 nodes, 17 × 5 − 3 observations, 10 − 3 − 1 relations
        // (0→10, 1→11 and 9→19 went with their nodes, 4→14 was deleted).
        assert_eq!(kept, (2 * 25 * 17, 2 * 25 * 82, 2 * 25 * 6));
        assert_eq!(kept, counted(workspace).await);
    }
    // 500 write statements added delta rows; the folds left far fewer.
    let rows: i64 = (client
        .query_one("SELECT count(*) FROM workspace_counts", &[])
        .await)
        .unwrap()
        .get(0);
    assert!(
        rows < 300,
        "{rows} delta rows: the counts were never folded"
    );
    // A deleted workspace takes its counts with it; the other's stay exact.
    memory
        .delete_workspace(DeleteWorkspace::new("b", true))
        .await
        .unwrap();
    let left: i64 = (client.query_one(
        "SELECT count(*) FROM workspace_counts WHERE workspace_id = $1",
        &[&b.0],
    ))
    .await
    .unwrap()
    .get(0);
    assert_eq!(left, 0);
    let stats = memory.call(a, GetStats {}).await.unwrap();
    assert_eq!(stats.node_count as i64, counted(a).await.0);
}

/// Brings the statistics of `store`'s observations up to date, for the testsuite's full-text
/// tests that read them.
async fn analyze(store: &PgStore) {
    let client = store.pool().get().await.unwrap();
    client.batch_execute("ANALYZE observations").await.unwrap();
}

#[tokio::test]
async fn text_search_leaves_out_words_most_observations_contain() {
    let store = std::sync::Arc::new(PgStore::connect(&fresh_database().await).await.unwrap());
    let refresh = || analyze(&store);
    engram_domain::testsuite::common_words_are_left_out_of_text_queries(store.clone(), refresh)
        .await;
}

#[tokio::test]
async fn text_search_finds_rare_words_beside_frequent_ones() {
    let store = std::sync::Arc::new(PgStore::connect(&fresh_database().await).await.unwrap());
    let refresh = || analyze(&store);
    engram_domain::testsuite::rare_words_are_found_beside_frequent_ones(store.clone(), refresh)
        .await;
}

#[tokio::test]
async fn text_ranking_weighs_words_by_rarity() {
    let store = std::sync::Arc::new(PgStore::connect(&fresh_database().await).await.unwrap());
    let refresh = || analyze(&store);
    engram_domain::testsuite::rare_words_outrank_common_ones(store.clone(), refresh).await;
}

#[tokio::test]
async fn an_unreachable_server_is_named_in_the_error() {
    let error = PgStore::connect("postgres://postgres@127.0.0.1:1/nowhere")
        .await
        .unwrap_err();
    assert!(
        matches!(error, engram_domain::Error::Unavailable(_)),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("(server 127.0.0.1:1, database nowhere)"),
        "{error}"
    );
}

/// A database written by the schema before memory over time (V11) migrates with nothing lost:
/// facts, relations and counts as they were, each fact and relation holding since it was
/// created, and the new tools working on it.
#[tokio::test]
async fn a_database_of_the_schema_before_migrates_with_nothing_lost() {
    use std::sync::Arc;

    use engram_domain::testsuite::strings;
    use engram_domain::*;

    let store = PgStore::connect(&engram_pg::testing::empty_database().await)
        .await
        .unwrap();
    store.migrate_to(11).await.unwrap();
    let client = store.pool().get().await.unwrap();
    client
        .batch_execute(
            "INSERT INTO workspaces (name, created_at) VALUES ('old', '2026-01-01T00:00:00Z');
             INSERT INTO nodes (workspace_id, name, entity_type, tags, next_ordinal, created_at)
             SELECT id, 'Alice', 'person', '{team}', 3, '2026-01-01T00:00:00Z' FROM workspaces;
             INSERT INTO nodes (workspace_id, name, entity_type, created_at)
             SELECT id, 'Acme', 'company', '2026-01-01T00:00:00Z' FROM workspaces;
             INSERT INTO observations (node_id, workspace_id, ordinal, content, created_at)
             SELECT n.id, n.workspace_id, o.ordinal, o.content, '2026-01-01T00:00:00Z'
             FROM nodes n, (VALUES (1, 'likes tea'), (2, 'works on storage')) AS o (ordinal, content)
             WHERE n.name = 'Alice';
             INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type, created_at)
             SELECT a.workspace_id, a.id, b.id, 'works_at', '2026-01-01T00:00:00Z'
             FROM nodes a, nodes b WHERE a.name = 'Alice' AND b.name = 'Acme';",
        )
        .await
        .unwrap();
    drop(client);
    assert!(!store.migrate().await.unwrap().is_empty());

    let memory = Memory::new(Arc::new(store));
    let ws = memory.workspace("old").await.unwrap().id;
    let january = "2026-01-01T00:00:00Z".parse::<Timestamp>().unwrap();
    let names = strings(&["Alice"]);
    let now = memory.call(ws, OpenNodes::new(&names)).await.unwrap();
    let texts: Vec<&str> = (now.entities[0].observations.iter())
        .map(|o| o.content.as_str())
        .collect();
    assert_eq!(texts, ["likes tea", "works on storage"]);
    assert_eq!(now.relations, [Relation::new("Alice", "Acme", "works_at")]);
    let ever = (memory.call(ws, OpenNodes::new(&names).at(ReadTime::Ever)))
        .await
        .unwrap();
    assert!(
        (ever.entities[0].observations.iter()).all(|o| o.valid_from == Some(january)),
        "{ever:?}"
    );
    assert_eq!(ever.relations[0].valid_from, Some(january));
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
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!((stats.node_count, stats.observation_count), (2, 2));
}
