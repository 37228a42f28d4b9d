//! PostgreSQL-specific checks beyond the conformance suite.

use engram_pg::PgStore;

use engram_pg::testing::fresh_database;

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/quickstart.rs"]
mod quickstart;

#[tokio::test]
async fn the_library_example_runs() {
    let opened = quickstart::run(&fresh_database().await, "quickstart")
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
    let store = PgStore::connect(&fresh_database().await).await.unwrap();
    assert!(store.is_migrated().await.unwrap());
    // The template was migrated already: a second run applies nothing.
    assert!(store.migrate().await.unwrap().is_empty());
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

    use engram_domain::Error;
    use engram_domain::testsuite::{entity, memory_with_workspace};

    let url = fresh_database().await;
    let store = PgStore::connect_with_limits(&url, 4, Duration::from_millis(300))
        .await
        .unwrap();
    let (memory, workspace) = memory_with_workspace(Arc::new(store.clone()), "limits").await;
    memory
        .create_entities(workspace, vec![entity("Ada", "person", &["first"])])
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
    let error = memory
        .add_observations(workspace, &additions)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, Error::Unavailable(_)), "{error}");
    assert!(error.to_string().contains("time limit"), "{error}");
    holding.rollback().await.unwrap();

    // Nothing was written, and the same call succeeds once the lock is gone.
    let stats = memory.get_stats(workspace).await.unwrap();
    assert_eq!(stats.observation_count, 1);
    memory
        .add_observations(workspace, &additions)
        .await
        .unwrap();
    assert_eq!(
        memory.get_stats(workspace).await.unwrap().observation_count,
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
                "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables
                 WHERE relname = 'observations'",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, bool>(0)
    };
    assert!(!last_analyze().await, "analyzed before any write");
    // Two bursts of 2,100 rows (100 nodes of 20 observations, in calls of 1,000
    // observations), a second apart so the first's counts have reached the statistics views.
    let facts: Vec<String> = (0..20).map(|i| format!("fact {i}")).collect();
    let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
    for burst in 0..2 {
        for call in 0..2 {
            let entities = (0..50)
                .map(|i| entity(&format!("n{burst}-{call}-{i}"), "thing", &facts))
                .collect();
            memory.create_entities(workspace, entities).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(1_200)).await;
    }
    let started = Instant::now();
    while !last_analyze().await {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the tables were not analyzed after 4,200 rows"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
