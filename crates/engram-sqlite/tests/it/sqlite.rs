//! SQLite-specific checks beyond the conformance suite.

use engram_sqlite::SqliteStore;

#[tokio::test]
async fn migrations_are_current_and_idempotent() {
    let store = crate::open_fresh().await;
    assert!(store.is_migrated().await.unwrap());
    assert!(store.migrate().await.unwrap().is_empty());
    let reopened = SqliteStore::open(store.path()).await.unwrap();
    assert!(reopened.is_migrated().await.unwrap());
}
