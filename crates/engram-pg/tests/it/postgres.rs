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
